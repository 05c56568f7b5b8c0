"""Waits a turn chooses: an outcome's ``wait`` held as the machine's wait.

The outcome step reads the outcome's ``wait`` (`heinzel.engine.outcome.WaitFor`) and,
the first time, returns the machine's `Wait` instead of the outcome: ``turn.waiting{step:
outcome, until, on?, output?}``, where hz fills in what the model cannot know:

- ``source: <input>`` becomes ``{kind: source, input, fingerprint_not}`` with the input's
  fingerprint as this turn gathered it (its facet's, when the input names one), so the
  tick resumes the turn when a later poll stages another (``woken_by: source``);
- ``approval: <output>`` becomes ``{kind: approval, key}`` with the key of that output's
  pending draft, so the tick resumes it when the draft is approved or rejected
  (``woken_by: approval``); with no draft pending there is nothing to wait for;
- ``until`` is the time (``woken_by: timer``); without it the machine's ``max_wait``.

``output`` is the output the outcome drafts, so a draft another turn places meanwhile
supersedes the wait (the turn ends ``abandoned superseded``). Resumed, the step runs again
with the same outcome, finds its own ``turn.waiting`` and returns the outcome, and act
performs it: the wait holds the acts, it never asks the model again. A crash before the
wait was recorded waits on recovery, since the spine has no ``turn.waiting`` yet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from heinzel.engine.outcome import Outcome
from ledger.event import format_ts, parse_ts
from machines import TurnContext, Wait

if TYPE_CHECKING:
    from heinzel.turns.env import TurnEnv

__all__ = ["hold"]


def _waited(ctx: TurnContext) -> bool:
    return any(
        e.kind == "turn.waiting" and e.data.get("step") == "outcome"
        for e in ctx.journal.turn_events(ctx.turn)
    )


def _fingerprint(env: TurnEnv, name: str) -> str | None:
    request = next((r for r in env.requests if r.input == name), None)
    if request is None:
        return None
    fetched = env.cache.get(request.key)
    if fetched is None:
        return None
    if request.facet is not None:
        found = fetched.fingerprints.get(request.facet)
        return None if found is None else str(found)
    return str(fetched.fingerprint)


def hold(env: TurnEnv, ctx: TurnContext, outcome: Outcome) -> Wait | None:
    """The wait an outcome asks for, the first time (None: go on as the outcome says; a
    resumed nothing-to-do wait ends the turn skipped ``check-unmet``)."""
    wait = outcome.wait
    if wait is None or _waited(ctx):
        return None
    on: dict[str, Any] | None = None
    if wait.source is not None:
        current = _fingerprint(env, wait.source)
        if current is not None:
            on = {"kind": "source", "input": wait.source, "fingerprint_not": current}
    elif wait.approval is not None:
        key = env.pending_draft(wait.approval)
        if key is not None:
            on = {"kind": "approval", "key": key}
    if on is None and wait.until is None:
        return None  # nothing to wait for: act now
    until = None if wait.until is None else format_ts(parse_ts(wait.until))
    output = outcome.draft.output if outcome.draft is not None else None
    return Wait(until=until, on=on, output=output)
