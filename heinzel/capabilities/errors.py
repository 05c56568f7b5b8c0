"""Coded errors of the capabilities: read sources, document adapters, the source cache."""

from __future__ import annotations

from ledger.errors import HzError

__all__ = ["CapabilityError"]


class CapabilityError(HzError):
    """A capability could not answer: a bad argument, an unreadable source, a bad document."""
