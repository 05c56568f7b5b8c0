"""What a step sees: the turn's pins and causes, and the journalled ways to act.

A step never appends to the journal itself: it asks its `TurnContext` to make a
model request (`model`), call a tool (`tool`) or perform an effect (`effect`), and
the context journals each one and answers replays from the record.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from typing import Any

from ledger.records import frozen_record
from machines.core.effects import Effect, Sleep, run_effect, settle_effect
from machines.core.fold import TurnState
from machines.core.tools import ToolDecl, run_tool
from machines.stores.journal import Body, Journal, content_hash


@frozen_record
class ModelReply:
    """What a model request gave: the reply (JSON-able, kept in the body) and its cost."""

    value: Any
    usd: float = 0.0
    tokens: int = 0


@frozen_record
class Steer:
    """A message handed to the running turn: its request id and content hash."""

    request_id: str
    hash: str


class TurnContext:
    """The running turn as its steps see it."""

    def __init__(
        self, *, journal: Journal, body: Body, state: TurnState, step: str, sleep: Sleep
    ) -> None:
        self.journal = journal
        self.body = body
        self.state = state
        self.step = step
        self._sleep = sleep
        self._model_index = 0
        self.settling = False
        """True while an abandoned turn's act step only probes its started effects."""
        self._calls: dict[str, int] = {}
        self._steers: list[Steer] = [
            Steer(str(s.get("request_id")), str(s.get("hash"))) for s in state.steered
        ]

    @property
    def turn(self) -> str:
        """The turn id."""
        return self.state.turn

    @property
    def pins(self) -> Mapping[str, Any]:
        """What the turn is pinned to (contract_version, skills, lessons_seq, vocabulary)."""
        return self.state.pins

    @property
    def key(self) -> str:
        """The key of the turn's first cause (the job it runs for)."""
        return str(self.state.causes[0]["key"]) if self.state.causes else ""

    @property
    def cause(self) -> str | None:
        """The turn's first cause."""
        return self.state.cause

    @property
    def causes(self) -> Sequence[Mapping[str, Any]]:
        """Every cause with its key."""
        return self.state.causes

    @property
    def woken_by(self) -> str | None:
        """What resumed the turn last (None for a turn that never waited or crashed)."""
        return self.state.woken_by

    def next_call_id(self, name: str) -> str:
        """The call id of the next call of tool ``name`` in this step: ``<step>:<name>:<n>``,
        its position among the step's calls of that tool (the same on every replay of
        the step, `machines.api`)."""
        n = self._calls[name] = self._calls.get(name, 0) + 1
        return f"{self.step}:{name}:{n}"

    def steer(self, steer: Steer) -> None:
        """Queue a steering message (already journalled as ``turn.steered``)."""
        self._steers.append(steer)

    def take_steers(self) -> list[Steer]:
        """The steering messages not yet handed to the model, emptying the queue."""
        taken, self._steers = self._steers, []
        return taken

    async def model(self, request: Callable[[list[Steer]], Awaitable[ModelReply]]) -> Any:
        """Make the next model request of this turn, or replay it from the record.

        ``request`` gets the steering messages queued since the last request; its
        reply is kept in the body and ``model.request{n, hash, usd, tokens}`` is
        journalled. A request recorded before a crash or a wait is answered from the
        body and costs nothing.
        """
        index = self._model_index
        self._model_index += 1
        recorded = self.state.model_requests
        if index < len(recorded):
            try:
                return self.body.get(self.turn, str(recorded[index].get("hash")))
            except KeyError:
                pass
        reply = await request(self.take_steers())
        digest = content_hash(reply.value)
        self.body.put(self.turn, digest, reply.value)
        data = {"n": index + 1, "hash": digest, "usd": reply.usd, "tokens": reply.tokens}
        self.journal.append("model.request", data, turn=self.turn)
        return reply.value

    async def tool(
        self, decl: ToolDecl, call_id: str, args: Any, call: Callable[[], Awaitable[Any]]
    ) -> Any:
        """Run a tool call under the replay rules of `machines.core.tools`."""
        result = await run_tool(
            decl,
            call_id,
            args,
            call,
            journal=self.journal,
            body=self.body,
            turn=self.turn,
            record=self.state.tools.get(call_id),
        )
        return result

    async def effect(self, effect: Effect) -> str:
        """Perform an effect through the ledger, at most once per key; its result hash.
        While ``settling`` (the turn is about to be abandoned) it is only probed."""
        if self.settling:
            record = self.state.effects.get(effect.key)
            return await settle_effect(effect, journal=self.journal, turn=self.turn, record=record)
        return await run_effect(
            effect,
            journal=self.journal,
            turn=self.turn,
            record=self.state.effects.get(effect.key),
            sleep=self._sleep,
        )


current: ContextVar[TurnContext | None] = ContextVar("machines.current", default=None)
"""The context of the step running in this task (`machines.api` finds it here)."""
