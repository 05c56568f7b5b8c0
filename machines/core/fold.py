"""The fold: a turn's events in, its state out. Pure, one ``_apply_<kind>`` per kind.

The fold also checks that the recorded path is one the transition table allows:
a spine written by a machine this code does not match (a step it does not know, a
step skipped, a finish without an act) is refused with `MachineError` HZM010, as
DBOS refuses an unexpected step and Temporal a nondeterministic history.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import field
from datetime import datetime
from typing import Any

from ledger.event import Event, parse_ts
from ledger.records import mutable_record
from machines.core.table import TABLE
from machines.errors import MachineError
from machines.host_vocabulary import HZ, Vocabulary
from machines.stores.journal import lines_of, wake_causes, wake_keys


@mutable_record
class EffectRecord:
    """What the journal says about one effect key."""

    key: str
    effect: str
    outcome: str | None = None
    hash: str | None = None
    error: str | None = None
    event_seen: bool = False


@mutable_record
class ToolRecord:
    """What the journal says about one tool call."""

    call_id: str
    tool: str
    replay_safe: bool
    args: str
    status: str | None = None
    hash: str | None = None
    error: str | None = None


@mutable_record
class TurnState:
    """A turn as its events describe it."""

    turn: str
    state: str = "new"
    waiting_step: str | None = None
    cause: str | None = None
    causes: list[dict[str, Any]] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    pins: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, str | None] = field(default_factory=dict)
    wait: dict[str, Any] | None = None
    woken_by: str | None = None
    resumes: int = 0
    model_requests: list[dict[str, Any]] = field(default_factory=list)
    reserved_usd: float = 0.0
    """The open reservation: a ``model.reserved`` no request settled or released yet."""
    lost_usd: float = 0.0
    """Reservations never settled (the process died, or the reply was lost): spent."""
    tools: dict[str, ToolRecord] = field(default_factory=dict)
    effects: dict[str, EffectRecord] = field(default_factory=dict)
    steered: list[dict[str, Any]] = field(default_factory=list)
    requested: list[dict[str, Any]] = field(default_factory=list)
    disposition: str | None = None
    reason: str | None = None
    error: str | None = None
    last_seq: int = 0
    running_ms: int = 0
    running_since: str | None = None
    exception: BaseException | None = field(default=None, compare=False, repr=False)
    """The exception a step of this run raised (the turn then failed, or the error
    was raised to the host): the object itself, for the host; the spine keeps only
    ``error`` (a code or class name). Never folded from events: None after a fold."""
    ran: Callable[[], int] | None = field(default=None, compare=False, repr=False)
    """Set by the process driving the turn (`machines.core.runner.TurnRun`): its running
    time by the monotonic clock, which `running_ms_at` never exceeds."""

    @property
    def spend_usd(self) -> float:
        """The turn's model spend so far: its requests' spend, and every reservation no
        request settled (the open one included: its request may have been paid)."""
        paid = sum(float(r.get("usd", 0)) for r in self.model_requests)
        return round(paid + self.lost_usd + self.reserved_usd, 6)

    @property
    def final(self) -> bool:
        """True once the turn ended (finished, skipped, abandoned or failed)."""
        return self.state in ("finished", "skipped", "abandoned", "failed")

    def running_ms_at(self, now: datetime) -> int:
        """Running time up to ``now``, for the process running the turn now: the
        time between its checkpoints while a process ran it, plus the time since
        the last one. Waiting time and downtime (a crash to its recovery) do not
        count (ADR 0049 statement 16). In the process driving the turn, never more
        than its monotonic clock measured (`ran`): a wall clock jump does not count."""
        if self.running_since is None:
            return self.running_ms
        delta = now - parse_ts(self.running_since)
        wall = self.running_ms + max(0, int(delta.total_seconds() * 1000))
        return wall if self.ran is None else min(wall, self.ran())


def _mismatch(event: Event, state: TurnState, why: str) -> MachineError:
    return MachineError(
        "HZM010",
        f"turn {state.turn} does not match this machine at seq {event.seq} "
        f"({event.kind} in state {state.state!r}): {why}",
        "finish or resume it with the hz version that wrote it, or fork a new turn "
        "from its last good checkpoint (hz heinzel retry)",
    )


def _move(state: TurnState, event: Event, trigger: str, dest: str) -> None:
    for row in TABLE:
        if row.trigger != trigger or row.dest != dest or state.state not in row.sources:
            continue
        if row.when_step is not None and row.when_step != state.waiting_step:
            continue
        state.state = dest
        return
    raise _mismatch(event, state, f"no transition {trigger!r} to {dest!r}")


def _elapsed_ms(since: str, until: str) -> int:
    return max(0, int((parse_ts(until) - parse_ts(since)).total_seconds() * 1000))


def _apply_turn_started(state: TurnState, event: Event) -> None:
    _move(state, event, "start", "gather")
    data = event.data
    state.cause = data.get("cause")
    state.causes = wake_causes(data, event.key)
    state.keys = wake_keys(data, event.key)
    state.pins = dict(data.get("pins", {}))
    state.inputs["gather"] = None
    state.running_since = event.ts


def _apply_step_started(state: TurnState, event: Event) -> None:
    step = event.data.get("step")
    triggers = {"think": "gathered", "outcome": "thought", "act": "decided", "finish": "acted"}
    if step not in triggers:
        raise _mismatch(event, state, f"unknown step {step!r}")
    _move(state, event, triggers[step], step)
    state.inputs[step] = event.data.get("input")


def _apply_turn_waiting(state: TurnState, event: Event) -> None:
    step = state.state
    _move(state, event, "wait", "waiting")
    state.waiting_step = step
    state.wait = {**event.data, "seq": event.seq}
    state.running_since = None


def _apply_turn_resumed(state: TurnState, event: Event) -> None:
    woken_by = event.data.get("woken_by")
    if state.state == "waiting":
        _move(state, event, "resume", str(state.waiting_step))
        state.wait = None
    else:
        _move(state, event, "resume", state.state)
    state.running_since = event.ts
    if woken_by == "recovery":
        state.resumes += 1
    regained = event.data.get("regained")
    if regained is not None:
        state.inputs[str(regained)] = event.data.get("input")
    else:
        state.woken_by = woken_by


def _apply_turn_finished(state: TurnState, event: Event) -> None:
    disposition = event.data.get("disposition")
    dest = {"failed": "failed", "abandoned": "abandoned"}.get(str(disposition), "finished")
    _move(state, event, {"failed": "fail", "abandoned": "abandon"}.get(dest, "conclude"), dest)
    state.disposition = disposition
    state.reason = event.data.get("reason")
    state.error = event.data.get("error")
    state.running_since = None


def _apply_turn_skipped(state: TurnState, event: Event) -> None:
    _move(state, event, "skip", "skipped")
    state.disposition = "skipped"
    state.reason = event.data.get("reason")
    state.keys = state.keys or wake_keys(event.data, event.key)
    state.causes = state.causes or wake_causes(event.data, event.key)


def _apply_turn_steered(state: TurnState, event: Event) -> None:
    state.steered.append(dict(event.data))


def _apply_turn_requested(state: TurnState, event: Event) -> None:
    state.requested.append({"cause": event.data.get("cause"), "key": event.key})


def _apply_model_request(state: TurnState, event: Event) -> None:
    state.model_requests.append(dict(event.data))
    state.reserved_usd = 0.0
    state.steered.clear()


def _apply_model_reserved(state: TurnState, event: Event) -> None:
    state.lost_usd += state.reserved_usd  # the one before was never settled: it counts
    state.reserved_usd = float(event.data.get("usd") or 0.0)


def _apply_model_released(state: TurnState, event: Event) -> None:
    state.reserved_usd = 0.0


def _apply_tool_called(state: TurnState, event: Event) -> None:
    data = event.data
    call_id = str(data.get("call_id"))
    state.tools[call_id] = ToolRecord(
        call_id, str(data.get("tool")), bool(data.get("replay_safe")), str(data.get("args"))
    )


def _apply_tool_result(state: TurnState, event: Event) -> None:
    call_id = str(event.data.get("call_id"))
    record = state.tools.get(call_id)
    if record is None and event.data.get("replay_safe") is True:
        record = state.tools[call_id] = ToolRecord(call_id, str(event.data.get("tool")), True, "")
    if record is None:
        raise _mismatch(event, state, "a tool result without its call")
    record.status = event.data.get("status")
    record.hash = event.data.get("hash")
    record.error = event.data.get("error")


def _apply_effect_started(state: TurnState, event: Event) -> None:
    key = str(event.key)
    state.effects[key] = EffectRecord(key, str(event.data.get("effect")))


def _effect(state: TurnState, event: Event) -> EffectRecord:
    record = state.effects.get(str(event.key))
    if record is None:
        raise _mismatch(event, state, f"{event.kind} without effect.started")
    return record


def _apply_effect_done(state: TurnState, event: Event) -> None:
    record = _effect(state, event)
    record.outcome, record.hash = "done", event.data.get("hash")


def _apply_effect_failed(state: TurnState, event: Event) -> None:
    record = _effect(state, event)
    record.outcome, record.error = "failed", event.data.get("error")


def _apply_other(state: TurnState, event: Event) -> None:
    record = state.effects.get(event.key or "")
    if record is not None:
        record.event_seen = True


APPLY: Mapping[str, Callable[[TurnState, Event], None]] = {
    "turn.started": _apply_turn_started,
    "step.started": _apply_step_started,
    "turn.waiting": _apply_turn_waiting,
    "turn.resumed": _apply_turn_resumed,
    "turn.finished": _apply_turn_finished,
    "turn.skipped": _apply_turn_skipped,
    "turn.steered": _apply_turn_steered,
    "turn.requested": _apply_turn_requested,
    "model.request": _apply_model_request,
    "model.reserved": _apply_model_reserved,
    "model.released": _apply_model_released,
    "tool.called": _apply_tool_called,
    "tool.result": _apply_tool_result,
    "effect.started": _apply_effect_started,
    "effect.done": _apply_effect_done,
    "effect.failed": _apply_effect_failed,
}
"""One apply per kind; every other kind of the turn goes to ``_apply_other`` (an
effect's own event marks its record seen; anything else is data for the host)."""


def _count_running(state: TurnState, event: Event) -> None:
    """Add the time since the turn's last checkpoint, unless this event is a
    recovery (the gap before it was downtime, not running time); a checkpoint
    written after the wall clock jumped says what the monotonic clock measured
    (``ran_ms``, `machines.core.runner.TurnRun`), and the jump does not count."""
    if state.running_since is None:
        return
    if event.kind == "turn.resumed" and event.data.get("woken_by") == "recovery":
        return
    state.running_ms += _elapsed_ms(state.running_since, event.ts)
    ran = event.data.get("ran_ms")
    if isinstance(ran, int) and 0 <= ran < state.running_ms:
        state.running_ms = ran
    state.running_since = event.ts


def apply_event(state: TurnState, event: Event, vocabulary: Vocabulary = HZ) -> None:
    """Fold one more event of the turn into ``state`` (renamed host words read as
    ``vocabulary`` says them now)."""
    for one in lines_of(vocabulary.migrate(event)):  # the steps and effects' ends it carries first
        _count_running(state, one)
        APPLY.get(one.kind, _apply_other)(state, one)
        state.last_seq = one.seq


def fold(turn: str, events: Iterable[Event], vocabulary: Vocabulary = HZ) -> TurnState:
    """The state of ``turn`` after ``events`` (events of other turns are ignored)."""
    state = TurnState(turn)
    for event in events:
        if event.turn == turn:
            apply_event(state, event, vocabulary)
    return state
