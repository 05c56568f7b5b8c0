"""The `Steps` protocol a host implements, and what a step may return besides a value.

A step's value must be JSON-able: the machine keeps it in the body under its hash
and records the hash in the next checkpoint, so a resume hands the same value to the
next step without running the earlier one again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import Any, Protocol

from ledger.records import frozen_record
from machines.core.context import TurnContext


@frozen_record
class Wait:
    """End the running step in ``waiting`` until ``until`` (ISO 8601) or ``on`` holds.

    ``on`` is ``{kind: source, input, fingerprint_not}``, ``{kind: approval, key}`` or
    ``{kind: answer, key}``; ``output`` names the output this turn would draft, so a
    draft placed meanwhile by another turn supersedes it.
    """

    until: str | None = None
    on: Mapping[str, Any] | None = None
    output: str | None = None


@frozen_record
class Skip:
    """End the turn skipped (from outcome: ``done-when-unmet``, ``cap``, ...)."""

    reason: str
    moved: Sequence[str] = ()


@frozen_record
class Fail:
    """End the turn failed with a short error (a code or a class name, no content)."""

    error: str


class OutOfTime(Exception):
    """Raised by a step whose work the turn's time limit stopped (a model request that
    outlived the turn's timeout): the turn ends abandoned ``timeout``, never resumed."""


@frozen_record
class Acted:
    """What the act step did: its disposition and small data for ``turn.finished``
    (a ``report`` field is the one line a user reads, allowed up to a short text)."""

    disposition: str
    data: Mapping[str, Any] = field(default_factory=dict)


class Steps(Protocol):
    """The work of a turn's steps, supplied by the host (async)."""

    async def gather(self, ctx: TurnContext) -> Any:
        """Collect the turn's inputs (into the body); return what think needs."""
        ...

    async def think(self, ctx: TurnContext, gathered: Any) -> Any:
        """Model and tool steps through ``ctx.model`` and ``ctx.tool``."""
        ...

    async def outcome(self, ctx: TurnContext, thought: Any) -> Any:
        """Validate what think produced into a structured outcome (or Skip, Fail, Wait)."""
        ...

    async def act(self, ctx: TurnContext, decided: Any) -> Acted | Wait | Fail:
        """Perform the outcome's effects through ``ctx.effect``; return `Acted`."""
        ...
