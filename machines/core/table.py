"""The turn machine's transition table, as data.

Each row names a trigger, the states it leaves, the state it enters and the event
kind appended (in the transition's ``before`` callback) as its checkpoint. The
machine (`machines.core.turn`) and the diagram (`machines.core.diagram`) are both built from
this table and nothing else.
"""

from __future__ import annotations

from typing import Final

from ledger.records import frozen_record

RUNNING: Final = ("gather", "think", "outcome", "act", "finish")
"""States in which a step's work runs (the five steps)."""

TERMINAL: Final = ("finished", "skipped", "abandoned", "failed")
"""States a turn never leaves."""

STATES: Final = ("new", *RUNNING, "waiting", *TERMINAL)
"""Every state; ``new`` is a turn that has no event yet."""


@frozen_record
class Row:
    """One transition: ``trigger`` from ``sources`` to ``dest``, journalled as ``checkpoint``.

    ``when_step`` restricts a row out of ``waiting`` to a turn that waited in that step.
    """

    trigger: str
    sources: tuple[str, ...]
    dest: str
    checkpoint: str
    when_step: str | None = None


_WAITABLE: Final = ("gather", "think", "outcome", "act")

TABLE: Final[tuple[Row, ...]] = (
    Row("start", ("new",), "gather", "turn.started"),
    Row("gathered", ("gather",), "think", "step.started"),
    Row("thought", ("think",), "outcome", "step.started"),
    Row("decided", ("outcome",), "act", "step.started"),
    Row("acted", ("act",), "finish", "step.started"),
    Row("conclude", ("finish",), "finished", "turn.finished"),
    Row("wait", _WAITABLE, "waiting", "turn.waiting"),
    *(Row("resume", ("waiting",), step, "turn.resumed", when_step=step) for step in _WAITABLE),
    *(Row("resume", (step,), step, "turn.resumed") for step in RUNNING),
    Row("skip", ("new", "outcome"), "skipped", "turn.skipped"),
    Row("fail", RUNNING, "failed", "turn.finished"),
    Row("abandon", (*RUNNING, "waiting"), "abandoned", "turn.finished"),
)
"""The table. ``resume`` out of a running state is the recorded resume after a crash."""

CHECKPOINT_OF: Final = {row.trigger: row.checkpoint for row in TABLE}
"""The event kind each trigger appends."""

NEXT_TRIGGER: Final = {
    "gather": "gathered",
    "think": "thought",
    "outcome": "decided",
    "act": "acted",
    "finish": "conclude",
}
"""The trigger that completes each step."""
