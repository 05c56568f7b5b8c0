"""Errors that carry a code, a message and a hint, for every package of hz.

Each package derives its own base from `HzError` (``LedgerError`` here,
``MachineError`` in `machines`, ``HeinzelError`` in `heinzel`), so a caller can
catch one package's failures, and the command line renders any of them the
same way: ``CODE: message`` and a hint line on stderr.
"""

from __future__ import annotations


class HzError(Exception):
    """A failure hz can explain: a stable code, what happened, and what to do."""

    code: str
    message: str
    hint: str

    def __init__(self, code: str, message: str, hint: str = "") -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.hint = hint

    def render(self) -> str:
        """The two lines the command line prints on stderr."""
        lines = f"{self.code}: {self.message}"
        if self.hint:
            lines += f"\nhint: {self.hint}"
        return lines


class LedgerError(HzError):
    """A failure of the durable record (codes ``HZL0xx``)."""
