"""Coded errors of the capabilities: read sources, document adapters, the source cache."""

from __future__ import annotations

from heinzel.errors import HeinzelError

__all__ = ["CapabilityError"]


class CapabilityError(HeinzelError):
    """A capability could not answer: a bad argument, an unreadable source, a bad document.

    ``retryable`` marks a failure that may pass on its own (a document saved while a
    draft was placed, a git that timed out); the effect ledger's retries
    (`machines.effects.is_retryable`) read that attribute.
    """

    retryable: bool

    def __init__(self, code: str, message: str, hint: str = "", *, retryable: bool = False) -> None:
        super().__init__(code, message, hint)
        self.retryable = retryable
