"""Starting, resuming, skipping and ending turns from outside: the resume rules.

- `start_turn`: ``turn.started`` with the causes, keys and pins, then the steps.
- `resume_turn`: fold the turn's own events (``journal.turn_events``, which reads
  from the turn's start, never the whole spine); a final turn is left alone; a
  turn past its timeout (running time only) ends abandoned ``timeout`` and is never
  resumed (its effects started and not probed are probed and recorded first); a
  turn interrupted more than ``max_resumes`` times ends abandoned
  ``max-resumes`` with its step; otherwise ``turn.resumed{woken_by}`` is recorded
  (``recovery`` after a crash, counted durably) and the steps continue from the
  last checkpoint.
- `skip_turn`: the one line of a turn that never runs (``turn.skipped``).
- `supersede`: a waiting turn whose output another turn drafted ends abandoned.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any

from ledger.event import Clock
from ledger.records import frozen_record
from machines.core.fold import TurnState, fold
from machines.core.runner import Settings, TurnRun
from machines.core.steps import Steps
from machines.core.turn import TurnMachine
from machines.errors import MachineError
from machines.host_vocabulary import HZ, Vocabulary, pinned_name
from machines.keys import Wake, order
from machines.stores.journal import Body, Journal
from machines.vocabulary import SKIP_REASONS, WOKEN_BY

if TYPE_CHECKING:
    from ulid import ULIDGenerator


@frozen_record
class Pins:
    """What a turn is pinned to (ADR 0049 statement 17)."""

    contract_version: int | None = None
    skills: Mapping[str, str] = field(default_factory=dict)
    lessons_seq: int | None = None

    def record(self, vocabulary: Vocabulary = HZ) -> dict[str, Any]:
        """The ``pins`` object of ``turn.started``, with the vocabulary it runs under.

        No null in it: ``skills`` only when there are some, ``contract_version`` only
        when known, and ``lessons_seq`` 0 when no lesson was active (lesson seqs start
        at 1, so 0 admits none, as the ``null`` of older spines did).
        """
        skills = {"skills": dict(sorted(self.skills.items()))} if self.skills else {}
        version = (
            {} if self.contract_version is None else {"contract_version": self.contract_version}
        )
        return {
            **version,
            **skills,
            "lessons_seq": self.lessons_seq or 0,
            **vocabulary.pins(),
        }


class TurnIds:
    """Mints turn ids, each strictly after the last it minted (or ``after``).

    python-ulid's `ULIDGenerator` keeps ids of one millisecond in order; a clock set
    back (by hand, by NTP) would still mint an earlier millisecond, and the new turn's
    id would sort before older ones. This keeps the last millisecond instead, so ids
    sort by start in this process whatever the wall clock does. ``after``: an id the
    host already holds (its journal's last turn), to keep that order across a restart.
    """

    def __init__(self, after: str | None = None) -> None:
        self._lock = threading.Lock()
        self._generator: ULIDGenerator | None = None  # python-ulid loads with the first id
        self._last_ms = 0
        if after is not None:
            self.after(after)

    def after(self, turn: str) -> None:
        """Mint every later id after ``turn`` (a ``turn-`` id; HZM082 otherwise)."""
        from ulid import ULID

        try:
            ms = ULID.from_str(turn.removeprefix("turn-")).milliseconds
        except ValueError:
            raise MachineError(
                "HZM082",
                f"{turn!r} is not a turn id minted by new_turn_id",
                "pass an id of the form turn-<ULID>, or none",
            ) from None
        with self._lock:  # a millisecond on: its random part is not this generator's
            self._last_ms = max(self._last_ms, ms + 1)

    def mint(self, clock: Clock) -> str:
        """A new id from ``clock``, after every id minted before."""
        moment = clock()
        with self._lock:
            if self._generator is None:
                from ulid import ULIDGenerator  # loads when a turn starts (a resume mints none)

                self._generator = ULIDGenerator()
            self._last_ms = max(self._last_ms, int(moment.timestamp() * 1000))
            ulid = self._generator.generate(self._last_ms)
        return "turn-" + str(ulid)


_TURN_IDS = TurnIds()


def new_turn_id(clock: Clock) -> str:
    """A fresh turn id, ``turn-`` and a ULID minted from the injected clock: ids sort
    by start time, even when the clock is set back (`TurnIds`), and never repeat
    across restarts (80 random bits per millisecond)."""
    return _TURN_IDS.mint(clock)


def _unused(journal: Journal, turn: str) -> None:
    """HZM017 when ``turn`` already has events: a turn id is used once."""
    if journal.turn_events(turn):
        raise MachineError(
            "HZM017",
            f"the turn id {turn} already has events in this journal",
            "mint a fresh id for each turn (machines.new_turn_id(clock)); resume an "
            "existing turn with resume_turn",
        )


def _causes(
    wakes: Sequence[Wake], vocabulary: Vocabulary = HZ
) -> tuple[list[Wake], dict[str, Any]]:
    ordered = order(wakes)
    if not ordered:
        raise MachineError("HZM005", "a turn needs at least one cause", "pass the wakes due")
    for wake in ordered:
        vocabulary.check_cause(wake.cause)
    data: dict[str, Any] = {"cause": ordered[0].cause}
    if len(ordered) > 1:  # one wake: its cause and the envelope key say it all
        data["causes"] = [{"cause": w.cause, "key": w.key} for w in ordered]
        data["keys"] = [w.key for w in ordered]
    return ordered, data


def prepare_turn(
    journal: Journal,
    body: Body,
    steps: Steps,
    settings: Settings,
    *,
    turn: str,
    wakes: Sequence[Wake],
    pins: Pins,
    data: Mapping[str, Any] | None = None,
) -> TurnRun:
    """Record ``turn.started`` and return the run, ready to `TurnRun.drive`
    (HZM017 when ``turn`` already has events)."""
    ordered, causes = _causes(wakes, settings.vocabulary)
    _unused(journal, turn)
    run = TurnRun(journal, body, steps, settings, TurnState(turn))
    record = pins.record(settings.vocabulary)
    run.fire("start", {**(data or {}), **causes, "pins": record}, key=ordered[0].key)
    return run


async def start_turn(
    journal: Journal,
    body: Body,
    steps: Steps,
    settings: Settings,
    *,
    turn: str,
    wakes: Sequence[Wake],
    pins: Pins,
    data: Mapping[str, Any] | None = None,
) -> TurnState:
    """Start a turn for ``wakes`` (coalesced: the first cause in the spec's order)."""
    run = prepare_turn(journal, body, steps, settings, turn=turn, wakes=wakes, pins=pins, data=data)
    return await run.drive()


def prepare_resume(
    journal: Journal,
    body: Body | None,
    steps: Steps | None,
    settings: Settings,
    *,
    turn: str,
    woken_by: str = "recovery",
) -> TurnRun | None:
    """Apply the resume rules; the run to drive, or None when the turn has ended."""
    if woken_by not in WOKEN_BY:
        raise MachineError("HZM006", f"{woken_by!r} is not a woken_by", ", ".join(WOKEN_BY))
    state = fold(turn, journal.turn_events(turn), settings.vocabulary)
    if state.state == "new":
        raise MachineError(
            "HZM007",
            f"turn {turn} has no events to resume",
            "start it with start_turn, or pass the turn id its key resolved to",
        )
    if state.final:
        return None
    if pinned_name(state.pins) != settings.vocabulary.name:
        raise MachineError(
            "HZM009",
            f"turn {turn} was started under vocabulary {pinned_name(state.pins)}, "
            f"not {settings.vocabulary.name}",
            "resume it with the Settings.vocabulary it was started under",
        )
    pinned = state.pins.get("vocabulary")
    if isinstance(pinned, int) and pinned > settings.vocabulary.version:
        raise MachineError(
            "HZM081",
            f"turn {turn} was started under version {pinned} of vocabulary "
            f"{settings.vocabulary.name}, later than this version "
            f"{settings.vocabulary.version}, which may lack its words",
            "resume it with the version it was started under or a later one",
        )
    run = TurnRun(journal, body, steps, settings, state)
    if run.over_time(resuming=True):
        return _end(run, "timeout", None)
    if state.state == "waiting":
        if woken_by == "recovery":
            return None
        run.fire("resume", {"woken_by": woken_by, "step": state.waiting_step})
        return run
    if state.resumes >= settings.max_resumes:
        error = f"interrupted {state.resumes + 1} times in {state.state}"
        return _end(run, "max-resumes", error)
    run.fire("resume", {"woken_by": "recovery", "step": state.state, "resumes": state.resumes + 1})
    return run


def _end(run: TurnRun, reason: str, error: str | None) -> TurnRun | None:
    """Abandon now, or, with effects started and not probed and the host's steps at
    hand, return the run to settle them first (`TurnRun.end`, when driven)."""
    settle = run.state.state == "act" and run.unsettled()
    if settle and run.steps is not None and run.body is not None:
        run.ending = (reason, error)
        return run
    run.abandon(reason, error=error)
    return None


async def resume_turn(
    journal: Journal,
    body: Body,
    steps: Steps,
    settings: Settings,
    *,
    turn: str,
    woken_by: str = "recovery",
) -> TurnState:
    """Resume ``turn`` after a crash (``recovery``) or a wait (what woke it)."""
    run = prepare_resume(journal, body, steps, settings, turn=turn, woken_by=woken_by)
    if run is None:
        return fold(turn, journal.turn_events(turn), settings.vocabulary)
    return await run.drive()


def skip_turn(
    journal: Journal,
    *,
    turn: str,
    wakes: Sequence[Wake],
    reason: str,
    moved: Sequence[str] = (),
) -> TurnState:
    """Record a turn that does not run: one ``turn.skipped`` line, no step work."""
    if reason not in SKIP_REASONS:
        raise MachineError("HZM008", f"{reason!r} is not a skip reason", ", ".join(SKIP_REASONS))
    ordered, causes = _causes(wakes, wakes[0].vocabulary if wakes else HZ)
    _unused(journal, turn)
    machine = TurnMachine(journal, turn)
    moved_data = {"moved": list(moved)} if moved else {}
    machine.fire("skip", {**causes, "reason": reason, **moved_data}, key=ordered[0].key)
    return fold(turn, journal.turn_events(turn))


def supersede(journal: Journal, settings: Settings, *, turn: str) -> TurnState:
    """End a waiting turn abandoned ``superseded`` (another turn drafted its output)."""
    state = fold(turn, journal.turn_events(turn))
    if state.state != "waiting":
        return state
    run = TurnRun(journal, None, None, settings, state)
    run.abandon("superseded")
    return run.state


async def retry_fork(
    journal: Journal,
    body: Body,
    steps: Steps,
    settings: Settings,
    *,
    parent: str,
    wake: Wake,
    pins: Pins,
    turn: str | None = None,
) -> TurnState:
    """Fork an ended turn: a new turn for ``wake`` (hz's is ``Wake("retry",
    keys.retry(owner, request_id))``, once per request), recording
    ``{"parent": parent}`` in its ``turn.started``. The recipe for a turn that ended
    abandoned (max-resumes, timeout), failed, or cannot go on (HZM010, HZM013): the
    parent stays as it ended and the fork runs from gather. HZM018 when the parent
    has not ended (resume it instead)."""
    state = fold(parent, journal.turn_events(parent), settings.vocabulary)
    if not state.final:
        raise MachineError(
            "HZM018",
            f"turn {parent} has not ended ({state.state}); a fork is for ended turns",
            "resume it with resume_turn, or stop it first",
        )
    return await start_turn(
        journal,
        body,
        steps,
        settings,
        turn=turn or new_turn_id(settings.clock),
        wakes=[wake],
        pins=pins,
        data={"parent": parent},
    )
