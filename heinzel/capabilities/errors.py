"""Coded errors of the capabilities: read sources, document adapters, the source cache."""

from __future__ import annotations

from heinzel.errors import HeinzelError

__all__ = ["CapabilityError"]


class CapabilityError(HeinzelError):
    """A capability could not answer: a bad argument, an unreadable source, a bad document."""
