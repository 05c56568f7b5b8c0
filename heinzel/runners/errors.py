"""The runners' coded error: a misconfigured runner or a bad handoff request.

A run that goes wrong (a timeout, a budget stop, a failing CLI, missing or
empty output) is an `AgentResult`, never an exception; `RunnerError` is only
for what the configuration or the caller got wrong, so it always says what to
fix. Codes are ``HZR0xx`` and documented in docs/errors.md.
"""

from __future__ import annotations

from heinzel.errors import HeinzelError

__all__ = ["RunnerError"]


class RunnerError(HeinzelError):
    """A runner that can't run as configured, or a handoff it must refuse (``HZR0xx``)."""
