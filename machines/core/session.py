"""Single flight per session, steering, requests and stop (ADR 0049 statement 14).

One `Session` runs at most one turn at a time, and so does a journal: a second `Session`
over the same journal in this process (an asyncio host with a web handler and a
background task, each with a `Session` of its own) is refused a turn while the first runs
one (HZM041), so an effect is never performed by two turns at once. The journal is known
by its spine's real path (`SpineJournal`), else by the object itself; between processes
the spine's lock does the same. A message that arrives
while the turn is in gather or think becomes ``turn.steered{request_id, hash}``, under
the request's own key (so the key rule knows it was delivered and never starts a turn of
it: `machines.keys.key_action`), and is handed to the host's next model request
(`TurnContext.model`); one that arrives
in outcome, act or finish (or any other wake while awake) becomes
``turn.requested{cause, key}``, and after the turn `follow_up` gives every
requested wake, for one follow-up turn. `stop` cancels the running step; the turn
ends abandoned ``stopped``, and queued messages stay for the next turn.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal

from machines.core.context import Steer
from machines.core.fold import TurnState, fold
from machines.core.resume import Pins, prepare_resume, prepare_turn
from machines.core.runner import Settings, TurnRun
from machines.core.steps import Steps
from machines.errors import MachineError
from machines.keys import Wake, coalesce
from machines.stores.journal import Body, Journal
from machines.telemetry.observe import OnCheckpoint, OnError

Delivery = Literal["steered", "requested", "idle"]

_FLIGHTS: dict[str, Session] = {}
"""The `Session` running a turn, by its journal (`_flight_key`), in this process."""
_FLIGHTS_LOCK = threading.Lock()


RESERVED_DATA = ("cause", "causes", "keys", "pins", "parent")
"""Names of ``turn.started`` the machine writes itself (its wakes, its pins, a fork's
parent): a host's ``data`` may not set them (HZM092)."""


def _own_data(data: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """``data`` for a turn's ``turn.started``, refused (HZM092) when it would set a name
    the machine writes: the turn's keys and causes (the key rule reads them), its pins,
    or the parent a fork records (`machines.core.resume.retry_fork`)."""
    taken = sorted(set(data or ()) & set(RESERVED_DATA))
    if taken:
        raise MachineError(
            "HZM092",
            f"the turn's data sets {', '.join(taken)}, which the machine writes itself",
            "pass the wakes for keys and causes, Pins for pins, and retry_fork for a "
            "parent; name your own fields otherwise",
        )
    return data


def _flight_key(journal: Journal) -> str:
    """A journal's identity: its spine's real path when it has one, else the object."""
    spine = getattr(journal, "spine", None)
    path = getattr(spine, "path", None)
    if path is not None:
        return "spine:" + str(os.path.realpath(os.fspath(path)))
    return f"object:{id(journal)}"


class Session:
    """The one writer's view of a session: at most one running turn."""

    def __init__(
        self,
        journal: Journal,
        body: Body,
        steps: Steps,
        settings: Settings,
        *,
        on_error: OnError | None = None,
        on_checkpoint: OnCheckpoint | None = None,
    ) -> None:
        """``on_error`` and ``on_checkpoint``, when given, replace the settings' hooks
        (`machines.telemetry.observe`)."""
        if on_error is not None:
            settings = replace(settings, on_error=on_error)
        if on_checkpoint is not None:
            settings = replace(settings, on_checkpoint=on_checkpoint)
        self.journal = journal
        self.body = body
        self.steps = steps
        self.settings = settings
        self._run: TurnRun | None = None
        self._task: asyncio.Task[TurnState] | None = None
        self._requested: list[Wake] = []
        self._leftover: list[Steer] = []
        self._flight = _flight_key(journal)

    @property
    def running(self) -> TurnRun | None:
        """The running turn, if any."""
        return self._run

    def _claim(self) -> None:
        """Take the journal's flight for a turn (HZM040: this session runs one; HZM041:
        another `Session` over the same journal does); `_release` gives it back."""
        if self._run is not None:
            raise MachineError(
                "HZM040",
                f"turn {self._run.turn} is running in this session",
                "send a message (it steers or is requested) instead of starting a turn",
            )
        with _FLIGHTS_LOCK:
            holder = _FLIGHTS.get(self._flight)
            if holder is not None and holder is not self:
                running = holder.running.turn if holder.running is not None else "a turn"
                raise MachineError(
                    "HZM041",
                    f"{running} is running in another Session over the same journal",
                    "keep one Session per journal in a process and send it the message "
                    "(it steers or is requested), or wait for its turn to end",
                )
            _FLIGHTS[self._flight] = self

    def _release(self) -> None:
        with _FLIGHTS_LOCK:
            if _FLIGHTS.get(self._flight) is self:
                del _FLIGHTS[self._flight]

    async def _drive(self, run: TurnRun) -> TurnState:
        self._run = run
        self._task = asyncio.create_task(run.drive())
        try:
            return await self._task
        finally:
            self._leftover.extend(
                Steer(str(s.get("request_id")), str(s.get("hash"))) for s in run.state.steered
            )
            self._run, self._task = None, None

    async def start(
        self,
        turn: str,
        wakes: Sequence[Wake],
        pins: Pins,
        data: Mapping[str, Any] | None = None,
    ) -> TurnState:
        """Start and drive a turn (refused while another runs: HZM040, HZM041; data
        setting a name the machine writes: HZM092)."""
        data = _own_data(data)
        self._claim()
        try:
            run = prepare_turn(
                self.journal,
                self.body,
                self.steps,
                self.settings,
                turn=turn,
                wakes=wakes,
                pins=pins,
                data=data,
            )
            return await self._drive(run)
        finally:
            self._release()

    async def resume(self, turn: str, woken_by: str = "recovery") -> TurnState | None:
        """Resume a turn by the resume rules. The abandoned state (with its reason,
        ``timeout`` or ``max-resumes``) when the rules ended it instead; None when
        there was nothing to run (it waits, or it had ended otherwise)."""
        self._claim()
        try:
            run = prepare_resume(
                self.journal, self.body, self.steps, self.settings, turn=turn, woken_by=woken_by
            )
            if run is None:
                state = fold(turn, self.journal.turn_events(turn), self.settings.vocabulary)
                return state if state.state == "abandoned" else None
            return await self._drive(run)
        finally:
            self._release()

    async def wake(
        self,
        wakes: Sequence[Wake],
        *,
        turn: str,
        pins: Pins,
        data: Mapping[str, Any] | None = None,
    ) -> list[TurnState]:
        """Apply the key rule to wakes due together: while a turn runs each becomes a
        request; otherwise open turns of their keys resume (recovery) and the new
        wakes start one turn ``turn``, coalesced. The states of what ran, and of
        turns the resume rules ended abandoned (timeout, max-resumes). ``data`` goes on
        the new turn's ``turn.started``; it may not set the turn's keys, causes, pins or
        parent (HZM092), refused before anything is written."""
        data = _own_data(data)
        if self._run is not None:
            for one in wakes:
                self.request(one)
            return []
        plan = coalesce(self.journal, wakes)
        ran = [state for t in plan.resume if (state := await self.resume(t)) is not None]
        if plan.start:
            ran.append(await self.start(turn, plan.start, pins, data))
        return ran

    def message(
        self, request_id: str, content_hash: str, key: str, *, cause: str = "asked"
    ) -> Delivery:
        """Deliver a chat message whose text is already in the host's inbox (``cause``:
        the wake it becomes when requested, a cause of the host's vocabulary)."""
        run = self._run
        if run is None:
            return "idle"
        if run.state.state in ("gather", "think"):
            run.journal.append(
                "turn.steered",
                {"request_id": request_id, "hash": content_hash},
                turn=run.turn,
                key=key,
            )
            if run.context is not None and run.context.step == run.state.state:
                run.context.steer(Steer(request_id, content_hash))
            return "steered"
        return self.request(Wake(cause, key, self.settings.vocabulary))

    def request(self, wake: Wake) -> Delivery:
        """Record a wake that found the session awake: it runs after this turn."""
        run = self._run
        if run is None:
            return "idle"
        run.journal.append("turn.requested", {"cause": wake.cause}, turn=run.turn, key=wake.key)
        self._requested.append(wake)
        return "requested"

    def stop(self) -> bool:
        """Cancel the running step; the turn ends abandoned ``stopped``. False if idle."""
        if self._task is None or self._task.done():
            return False
        self._task.cancel()
        return True

    def follow_up(self) -> list[Wake]:
        """The wakes requested during the last turn, for one follow-up turn (emptied)."""
        wakes, self._requested = self._requested, []
        return wakes

    def leftover_steers(self) -> list[Steer]:
        """Steering messages no model request received (a stop, or a turn that ended
        first): the host gives them to the next turn (emptied)."""
        steers, self._leftover = self._leftover, []
        return steers
