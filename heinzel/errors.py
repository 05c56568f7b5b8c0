"""The errors of the `heinzel` package: `HeinzelError` and the compiler's `ContractError`.

Every failure the product can explain derives from `HeinzelError` (codes ``HZH0xx`` for the
core, configuration and command line; ``HZC0xx`` for the contract compiler). A
`ContractError` also says where: the file and the line the problem is on, so the command
line can print ``HZC020: weekly-report.prose.md:6: ...`` and a hint.
"""

from __future__ import annotations

from collections.abc import Sequence

from ledger.errors import HzError

__all__ = ["ContractError", "HeinzelError"]


class HeinzelError(HzError):
    """A failure of the product (codes ``HZH0xx``, and the base of ``HZC``/``HZE``/``HZR``)."""


class ContractError(HeinzelError):
    """A contract or skill file hz refuses: a ``HZC0xx`` code, where, what, and the fix.

    ``file`` is the name the text was compiled under (``<text>`` when it came from no
    file); ``line`` is 1-based, ``None`` when the error belongs to the whole file. The
    compiler reports every independent problem of a file at once: the first is this error
    itself (its code is the one a caller sees), the others are in ``also``; `errors` gives
    them all in order, and `render` prints them all.
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
        also: Sequence[ContractError] = (),
    ) -> None:
        super().__init__(code, message, hint)
        self.file = file
        self.line = line
        self.also = tuple(also)

    @classmethod
    def of(cls, errors: Sequence[ContractError]) -> ContractError:
        """One error that carries all of ``errors`` (at least one): the first, with the
        rest in ``also``."""
        first, *rest = errors
        if not rest:
            return first
        return cls(
            first.code,
            first.message,
            first.hint,
            file=first.file,
            line=first.line,
            also=[*first.also, *(e for error in rest for e in error.errors)],
        )

    @property
    def errors(self) -> tuple[ContractError, ...]:
        """This error and every one found with it, in the order they are reported."""
        return (self, *self.also)

    @property
    def where(self) -> str:
        """``file:line``, or only the file when the line is unknown."""
        return self.file if self.line is None else f"{self.file}:{self.line}"

    def render(self) -> str:
        """``CODE: file:line: message`` and the hint line, for each error found; when there
        are several, a last line counts them."""
        parts = []
        for error in self.errors:
            text = f"{error.code}: {error.where}: {error.message}"
            if error.hint:
                text += f"\nhint: {error.hint}"
            parts.append(text)
        if self.also:
            parts.append(f"{len(parts)} problems in {self.file}; fix them all, then run it again")
        return "\n".join(parts)
