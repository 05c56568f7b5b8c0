"""The frozen vocabulary: event kinds, step names, dispositions and reasons.

These names are compatibility data: spines written years ago are read with them.
The lists only ever grow; a kind whose payload changes incompatibly gets a new
name (``draft.placed.2``) and the old one is migrated in memory on read (see
`machines.stores.upgrades`). ``tests/machines/test_vocabulary.py`` pins every list.
"""

from __future__ import annotations

from typing import Final, Literal

VOCABULARY_VERSION: Final = 2
"""Recorded in ``turn.started`` (``pins.vocabulary``); raised when a line written under it
would be misread by a reader of the version before (docs/spine.md, "Versions: what may
change and how"). 2: lines carry step starts (``steps``) and an effect's end (``done``),
``model.reserved`` counts against the caps, ``turn.skipped`` carries ``usd``, ``usage``
says ``kind``, a step's ``input`` names its value by 12 hex digits."""

VOCABULARY_CHANGES: Final = {
    2: (
        "steps: a line carries its turn's step starts",
        "done: a line carries the end of the effect before it (effect.done, draft.placed)",
        "model.reserved: a reservation counts against the caps until settled",
        "turn.skipped.usd: a skipped turn's spend",
        "usage.kind: was usage.by",
        "step.started.input: 12 hex digits, was the whole sha256: hash",
    ),
}
"""What each version changed that a reader of the version before misreads (version 1 is
ADR 0049's list); `tests/machines/test_vocabulary.py` pins it."""

STEPS: Final = ("gather", "think", "outcome", "act", "finish")
"""The five steps of a turn, in order."""

Step = Literal["gather", "think", "outcome", "act", "finish"]

SPEC_KINDS: Final = (
    "turn.started",
    "turn.waiting",
    "turn.resumed",
    "turn.steered",
    "turn.requested",
    "turn.skipped",
    "turn.finished",
    "effect.started",
    "effect.done",
    "effect.failed",
    "draft.placed",
    "question.asked",
    "question.answered",
    "approval.observed",
    "lesson.recorded",
    "lesson.dismissed",
    "context.edit",
    "usage",
    "summary.written",
    "contract.amended",
    "amendment.declined",
    "step.handoff",
)
"""The event kinds ADR 0049 and ADR 0050 name (design.md's list)."""

MACHINE_KINDS: Final = (
    "step.started",
    "model.request",
    "tool.called",
    "tool.result",
    "model.reserved",
    "model.released",
)
"""The checkpoint kinds the turn machine adds, in the same style:

- ``step.started {step, input}``: the turn entered a step; ``input`` is the hash of
  the previous step's result (its content is in the turn body).
- ``model.request {n, hash, usd, tokens}``: the n-th model request of the turn
  completed; ``hash`` names its reply in the body; ``usd`` is its spend.
- ``tool.called {call_id, tool, args, replay_safe}``: a call that is not
  replay-safe is about to run (``args`` is the hash of its arguments).
- ``tool.result {call_id, hash, status}``: its result (``status`` ok, error or
  interrupted); a replay-safe call writes this line only, after the call, with
  ``tool`` and ``replay_safe: true`` (a rerun is harmless, so its start needs no line).
- ``model.reserved {usd}``: the next model request's worst-case price, reserved against
  the caps and durable before the request is sent. The next ``model.request`` of the
  turn settles it (its own ``usd`` is what was spent); ``model.released`` lets it go;
  one neither follows (a crash, a lost reply) counts in full.
- ``model.released {}``: the reserved request got no reply and cost nothing (the
  provider refused it).
"""

KINDS: Final = SPEC_KINDS + MACHINE_KINDS
"""Every event kind the turn machine knows (``model.reserved`` and ``model.released``
were written under version 1 before 2 named their meaning)."""

TERMINAL_KINDS: Final = ("turn.finished", "turn.skipped")
"""Kinds that end a turn and make its keys final."""

DISPOSITIONS: Final = ("drafted", "asked", "learned", "proposed", "skipped", "failed", "abandoned")
"""How a turn ended (``turn.finished.disposition``; ``skipped`` is ``turn.skipped``)."""

ACT_DISPOSITIONS: Final = ("drafted", "asked", "learned", "proposed")
"""What a completed act step may report."""

SKIP_REASONS: Final = ("nothing-moved", "check-unmet", "done-when-unmet", "cap", "throttled")
"""Why a turn was skipped (``turn.skipped.reason``)."""

ABANDON_REASONS: Final = ("timeout", "max-resumes", "stopped", "superseded", "unanswered")
"""Why a turn was abandoned (``turn.finished.reason`` when the disposition is abandoned)."""

CAUSES: Final = (
    "schedule",
    "source-changed",
    "discovered",
    "asked",
    "approval",
    "created",
    "retry",
    "stale",
)
"""Wake causes, in the order that picks a coalesced turn's ``cause`` (ADR 0049 4, 13)."""

WOKEN_BY: Final = ("timer", "source", "approval", "answer", "asked", "recovery")
"""``turn.resumed.woken_by``: the five of ADR 0049 statement 12 for a wait, and
``recovery`` for a resume after a crash (counted against ``max_resumes``)."""

WAIT_ON: Final = ("source", "approval", "answer")
"""``turn.waiting.on.kind``: what a waiting turn waits for besides its ``until``."""

TOOL_STATUSES: Final = ("ok", "error", "interrupted")
"""``tool.result.status``."""
