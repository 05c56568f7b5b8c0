"""Delivery: the inbox's requests handed to the turn this process runs (ADR 0049 statement 14).

A chat or a stop sent while another process runs the turn is only a request file
(`heinzel.store.inbox`); this process holds the spine's lock, so it is the one writer that turns
the request into a spine line (`Delivery.poll`, called by `DeliveringSteps` at each step
boundary and by the think step's ``steering()`` right before each model request):

- a chat during gather or think waits for the next model request: there
  `machines.Session.message` writes ``turn.steered{request_id, hash}`` under the chat's
  key ``<id>@<request id>``, the text goes with that request, and the request is taken.
  Never at a step boundary, so a steer always has a model request after it (a turn whose
  think ends first gets the chat at its next boundary, as a request); during outcome, act
  or finish it writes ``turn.requested{cause: asked}`` keyed ``<id>@<request id>`` and the
  request stays pending until a turn has that key (so a crash before the follow-up turn
  loses nothing: the tick wakes it);
- a stop naming this turn: the running step is cancelled and the turn ends abandoned
  ``stopped`` (stops are read before chats, so no chat is steered into a turn a stop
  ends; a model request in flight is cancelled too: `Delivery.stop_asked`, watched while
  the model is asked); a stop naming another turn is stale and only taken;
- a wake the tick handed over (kind ``requested``, `Inbox.hand`): ``turn.requested{cause}``
  under the wake's own key, at any step; like a chat it stays pending until a turn has the
  key, and the follow-up turn runs it (approvals each in a turn of their own, `batches`).

One message, one turn: a chat's delivery is claimed by one spine line, written under the
spine's lock, ``turn.steered`` or a ``turn.started``/``turn.skipped`` carrying its key
(`CLAIMS`). A request whose key has a claim is only taken, never journalled again, and the
key rule (`machines.keys.key_action`) starts no turn for a key a steer claimed, so a chat
steered into one turn never runs in another, whoever holds the lock next. After the turn,
`follow_ups` gives every requested cause (from the fold, so a resumed turn keeps those
requested before a crash) and the chats that came after the last poll, for one follow-up
turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from heinzel.errors import HeinzelError
from heinzel.logs import get_logger
from heinzel.store.home import Home
from heinzel.store.inbox import Inbox, Request, handed
from heinzel.turns.failure import root_cause
from heinzel.turns.record import IndexedJournal
from ledger.errors import HzError
from ledger.event import Clock
from machines import Session, TurnContext, TurnState, Wake, keys
from machines.core.steps import Acted, Fail, Steps, Wait
from machines.keys import order

__all__ = ["DeliveringSteps", "Delivery", "batches", "undelivered"]

TURN_KINDS = frozenset({"turn.started", "turn.skipped"})
"""A key with one of these has a turn."""
CLAIMS = TURN_KINDS | {"turn.steered"}
"""A key with one of these is delivered: a turn has it, or a turn was steered with it."""
STEERABLE = ("gather", "think")


class Delivery:
    """The pending requests of one Heinzelmännchen, delivered to its running turn."""

    def __init__(self, home: Home, heinzel_id: str, journal: IndexedJournal, clock: Clock) -> None:
        self.inbox = Inbox(home, heinzel_id)
        self.heinzel = heinzel_id
        self.journal = journal
        self.clock = clock
        self.session: Session | None = None
        self.interrupted: Callable[[], str | None] = lambda: None
        """The signal that asked this process to stop its turn (`heinzel.turns.interrupt`)."""

    def _steered(self, turn: str) -> set[str]:
        return {
            str(e.data.get("request_id"))
            for e in self.journal.turn_events(turn)
            if e.kind == "turn.steered"
        }

    def _kinds(self, request: Request) -> set[str]:
        key = keys.asked(self.heinzel, request.request_id)
        return {e.kind for e in self.journal.key_events(key)}

    def _pending(self) -> list[Request]:
        """The pending requests; an unreadable inbox file (HZH233) never fails the turn:
        it is logged and the inbox is read again at the next boundary."""
        try:
            pending = self.inbox.pending()
            if not any(r.kind == "chat" for r in pending):
                return pending
            answers = self.inbox.answered_chats()  # the tick runs their answers' follow-ups
            return [r for r in pending if not (r.kind == "chat" and r.request_id in answers)]
        except HeinzelError as error:
            get_logger().warning("inbox.unreadable", heinzel=self.heinzel, code=error.code)
            return []

    def _take(self, request: Request) -> None:
        self.inbox.take(request.request_id, at=self.clock())

    def stop_asked(self) -> str | None:
        """Who asked the running turn to stop: the signal's name, or the id of a stop
        request naming it (or naming no turn); None when nobody did. Only reads: a model
        request in flight is cancelled on it (`heinzel.turns.steps.watching_stop`)."""
        run = self.session.running if self.session is not None else None
        if run is None:
            return None
        if self.interrupted() is not None:
            return self.interrupted()
        for request in self._pending():
            if request.kind == "stop" and request.message in ("", run.turn):
                return request.request_id
        return None

    def poll(self, *, stop: bool = True, steer: bool = False) -> None:
        """Deliver what the inbox holds to the running turn; with ``stop``, a stop for it
        raises `asyncio.CancelledError`, which the machine ends as ``abandoned stopped``
        (without, as after a step's work is done, the stop waits for the next boundary).
        ``steer``: a model request follows at once (the think step's ``steering()``), so a
        chat may be steered; at a boundary a chat in gather or think waits for it."""
        run = self.session.running if self.session is not None else None
        if run is None:
            return
        if stop and self.interrupted() is not None:
            raise asyncio.CancelledError(f"stopped by {self.interrupted()}")
        pending = self._pending()
        for request in [r for r in pending if r.kind == "stop"]:
            if request.message not in ("", run.turn):
                self._take(request)
            elif stop:
                raise asyncio.CancelledError(f"stopped by {request.request_id}")
        steered: set[str] | None = None  # this turn's steers, old lines without a key too
        for request in pending:
            if request.kind == "requested":
                self._requested(request)
                continue
            if request.kind != "chat":
                continue
            if steered is None:
                steered = self._steered(run.turn)
            kinds = self._kinds(request)
            if request.request_id in steered or kinds & CLAIMS:
                self._take(request)
            elif "turn.requested" in kinds or (run.state.state in STEERABLE and not steer):
                continue
            else:
                key = keys.asked(self.heinzel, request.request_id)
                assert self.session is not None
                if self.session.message(request.request_id, request.hash, key) == "steered":
                    self._take(request)

    def _requested(self, request: Request) -> None:
        """A wake the tick handed over: requested once under its key (taken once a turn
        has the key; a garbled one is only taken)."""
        wake = handed(request)
        if wake is None:
            self._take(request)
            return
        kinds = {e.kind for e in self.journal.key_events(wake[1])}
        if kinds & TURN_KINDS:
            self._take(request)
        elif "turn.requested" not in kinds and self.session is not None:
            self.session.request(Wake(wake[0], wake[1]))

    def follow_ups(self, states: Sequence[TurnState]) -> list[Wake]:
        """The wakes for one follow-up turn after ``states`` ended: requested causes and
        chats that came after the last poll; stops of these turns are taken, and chats
        already delivered (claimed) too."""
        wakes: list[Wake] = []
        ended = {state.turn for state in states}
        for state in states:
            wakes += [Wake(str(r["cause"]), str(r["key"])) for r in state.requested if r["key"]]
        for request in self._pending():
            stale = request.kind == "stop" and request.message in ended
            if stale or (request.kind == "chat" and self._kinds(request) & CLAIMS):
                self._take(request)
            elif request.kind == "chat":
                wakes.append(Wake("asked", keys.asked(self.heinzel, request.request_id)))
            elif (wake := handed(request)) is not None:
                wakes.append(Wake(*wake))
        return [
            w for w in order(wakes) if not {e.kind for e in self.journal.key_events(w.key)} & CLAIMS
        ]


def batches(wakes: Sequence[Wake]) -> list[list[Wake]]:
    """Follow-up wakes as turns: each approval its own learning turn first (as the tick
    runs them), the rest coalesced into one."""
    first = [[w] for w in wakes if w.cause == "approval"]
    rest = [w for w in wakes if w.cause != "approval"]
    return first + ([rest] if rest else [])


class DeliveringSteps:
    """The host's steps with the inbox polled at each step boundary: before a step's work
    (a stop cancels it) and after it (a chat that came during act is requested)."""

    def __init__(self, steps: Steps, delivery: Delivery) -> None:
        self.steps = steps
        self.delivery = delivery
        self.failure: HzError | None = None
        """The coded cause of the last step that raised (`heinzel.turns.failure`)."""

    async def _around(self, work: Callable[[], Awaitable[Any]]) -> Any:
        self.delivery.poll()
        try:
            result = await work()
        except Exception as error:
            self.failure = root_cause(error) or self.failure
            raise
        self.delivery.poll(stop=False)
        return result

    async def gather(self, ctx: TurnContext) -> Any:
        return await self._around(lambda: self.steps.gather(ctx))

    async def think(self, ctx: TurnContext, gathered: Any) -> Any:
        return await self._around(lambda: self.steps.think(ctx, gathered))

    async def outcome(self, ctx: TurnContext, thought: Any) -> Any:
        return await self._around(lambda: self.steps.outcome(ctx, thought))

    async def act(self, ctx: TurnContext, decided: Any) -> Acted | Wait | Fail:
        result: Acted | Wait | Fail = await self._around(lambda: self.steps.act(ctx, decided))
        return result


def undelivered(journal: IndexedJournal, wakes: Sequence[Wake]) -> list[Wake]:
    """``wakes`` without those whose key a steer already claimed (call it under the spine's
    lock, so no turn steers one after the check): a chat steered into a turn while its
    sender waited for the lock is delivered there, and runs no turn of its own."""
    return [
        w for w in wakes if not any(e.kind == "turn.steered" for e in journal.key_events(w.key))
    ]
