"""Coded errors of the capabilities: read sources, document adapters, the source cache."""

from __future__ import annotations

from heinzel.errors import HeinzelError

__all__ = ["CapabilityError"]


class CapabilityError(HeinzelError):
    """A capability could not answer: a bad argument, an unreadable source, a bad document.

    ``retryable`` marks a failure that may pass on its own (a document saved while a
    draft was placed, a git that timed out); the effect ledger's retries
    (`machines.core.effects.is_retryable`) read that attribute. ``retry_after`` is how many
    seconds the other side asked to be left alone (a rate limit's ``Retry-After`` or
    reset), None when it said nothing: the source cache asks again no earlier.
    """

    retryable: bool
    retry_after: float | None

    def __init__(
        self,
        code: str,
        message: str,
        hint: str = "",
        *,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(code, message, hint)
        self.retryable = retryable
        self.retry_after = retry_after
