"""The errors of the `heinzel` package: `HeinzelError` and the compiler's `ContractError`.

Every failure the product can explain derives from `HeinzelError` (codes ``HZH0xx`` for the
core, configuration and command line; ``HZC0xx`` for the contract compiler). A
`ContractError` also says where: the file and the line the problem is on, so the command
line can print ``HZC020: weekly-report.prose.md:6: ...`` and a hint.
"""

from __future__ import annotations

from ledger.errors import HzError

__all__ = ["ContractError", "HeinzelError"]


class HeinzelError(HzError):
    """A failure of the product (codes ``HZH0xx``, and the base of ``HZC``/``HZE``/``HZR``)."""


class ContractError(HeinzelError):
    """A contract or skill file hz refuses: a ``HZC0xx`` code, where, what, and the fix.

    ``file`` is the name the text was compiled under (``<text>`` when it came from no
    file); ``line`` is 1-based, ``None`` when the error belongs to the whole file.
    """

    file: str
    line: int | None

    def __init__(
        self,
        code: str,
        message: str,
        hint: str = "",
        *,
        file: str = "<text>",
        line: int | None = None,
    ) -> None:
        super().__init__(code, message, hint)
        self.file = file
        self.line = line

    @property
    def where(self) -> str:
        """``file:line``, or only the file when the line is unknown."""
        return self.file if self.line is None else f"{self.file}:{self.line}"

    def render(self) -> str:
        """``CODE: file:line: message`` and the hint line."""
        lines = f"{self.code}: {self.where}: {self.message}"
        if self.hint:
            lines += f"\nhint: {self.hint}"
        return lines
