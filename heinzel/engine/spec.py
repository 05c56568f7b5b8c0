"""What the engine needs from the rest of hz, as small types of its own.

The engine never imports the contract compiler, the ledger's bodies or the turn
machine. The host (the turn machine's think step) adapts them to these:

- `TurnSpec`: the pinned contract and this wake's staged inputs.
- `SpineView`: the compact records of the session's past events.
- `Recorder`: where checkpoints (spine lines) and body records go.
- `ReadCapability`: a capability handle's window-taking read methods.
- `Runner`: the bound agent runner for ``handoff`` (absent when none is bound).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import field
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal, Protocol

from ledger.records import frozen_record

__all__ = [
    "Cause",
    "HandoffRequest",
    "InputSpec",
    "LessonView",
    "ReadCapability",
    "ReadMethod",
    "Recorder",
    "Runner",
    "Skill",
    "SpineRecord",
    "SpineView",
    "TurnSpec",
]

Cause = Literal[
    "schedule", "source-changed", "discovered", "asked", "approval", "created", "retry", "stale"
]


@frozen_record
class InputSpec:
    """One declared input as staged for this wake (``content`` is never fetched again)."""

    name: str
    content: str
    source: str = ""


@frozen_record
class Skill:
    """A skill that applies to this turn: advice rendered into the instructions."""

    name: str
    text: str
    fingerprint: str = ""


@frozen_record
class LessonView:
    """An active lesson as the spine recorded it (``lesson.recorded``)."""

    id: str
    sentence: str


@frozen_record
class TurnSpec:
    """The turn as the engine sees it: the contract at its pinned version and the inputs.

    ``max_usd`` is the contract's ``agent.max_usd`` (None when it sets none);
    ``started_at`` stamps the context's messages so the context is deterministic.
    """

    turn: str
    cause: Cause
    contract_name: str
    """The Heinzelmännchen's name (a creation's, ``new``, before it has one); the hints of
    a failed think (HZE010, HZE011) name it in the retry command."""
    contract_version: int
    body: str
    started_at: datetime
    inputs: tuple[InputSpec, ...] = ()
    outputs: tuple[str, ...] = ()
    done_when: tuple[str, ...] = ()
    max_usd: Decimal | None = None
    model_class: Literal["fast", "standard", "best"] = "standard"


@frozen_record
class SpineRecord:
    """One past spine event, compact: the fields of the envelope the context needs."""

    seq: int
    turn: str | None
    kind: str
    data: Mapping[str, Any] = field(default_factory=dict)


@frozen_record
class SpineView:
    """The session's past events, in seq order (the host reads them from the spine).

    ``earlier``: when set, ``earlier(n)`` is a view of the same past that holds at least
    its last ``n`` turns (the ``previous_turns`` tool), read only when the tool is called;
    None: ``records`` holds every turn the tool may show.
    """

    records: tuple[SpineRecord, ...] = ()
    earlier: Callable[[int], SpineView] | None = field(default=None, compare=False, repr=False)


class Recorder(Protocol):
    """Where the think step writes: spine lines (no content) and body records (content).

    ``checkpoint`` appends one spine line of ``kind`` with ``data``; ``body`` appends
    one record to the turn body and returns its hash (``"sha256:..."``). Either may
    be written without its own fsync (a ``step.model`` checkpoint never is: the
    money it records is spent); ``durable`` makes everything recorded so far
    durable, and the engine calls it before a call that is not replay-safe
    (docs/spine.md, "One fsync per step").
    """

    def checkpoint(self, kind: str, data: Mapping[str, Any]) -> None: ...

    def body(self, record: Mapping[str, Any]) -> str: ...

    def durable(self) -> None: ...


@frozen_record
class ReadMethod:
    """A method of a capability; only ``mode == "read"`` methods taking a window become tools."""

    name: str
    description: str
    mode: Literal["read", "write"] = "read"
    takes_window: bool = True


class ReadCapability(Protocol):
    """A capability handle with requester kind heinzel and mode read (ADR 0028)."""

    @property
    def name(self) -> str: ...

    @property
    def methods(self) -> Sequence[ReadMethod]: ...

    async def search(self, method: str, args: Mapping[str, str], window: str) -> Any: ...


@frozen_record
class HandoffRequest:
    """What ``handoff`` hands the bound runner: the task, the files, the share of the cap."""

    task: str
    files: Mapping[str, str]
    budget_usd: Decimal
    instructions: str


Runner = Callable[[HandoffRequest], Awaitable[str]]
"""The bound agent runner: runs once, read-only, and returns its report."""
