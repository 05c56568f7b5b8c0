"""Test doubles that ship with `machines`: a manual clock, a fake world and
scripted steps. Hosts and later issues use them to test their own embeddings
(structlog ships its test doubles the same way)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from machines.core.context import ModelReply, Steer, TurnContext
from machines.core.effects import Effect, LocalProbe, Presence, Probe, WorldProbe
from machines.core.fold import TurnState
from machines.core.resume import Pins, resume_turn, start_turn
from machines.core.runner import Settings
from machines.core.steps import Acted, Fail, Skip, Wait
from machines.core.tools import ToolDecl
from machines.keys import Wake, place_draft, question, schedule
from machines.stores.journal import InMemoryBody, InMemoryJournal


class ManualClock:
    """A clock that moves only when told to: a wall part (call it) and a monotonic
    part (`monotonic`, which `Settings` finds on the clock it is given)."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2026, 10, 30, 15, 0, tzinfo=UTC)
        self.ran = 0.0
        """Seconds the monotonic part has run."""

    def __call__(self) -> datetime:
        return self.now

    def monotonic(self) -> float:
        """The monotonic part, in seconds: moved by `advance`, not by `jump`."""
        return self.ran

    def advance(self, **delta: float) -> None:
        """Let time pass (``timedelta`` keyword arguments): both parts move."""
        step = timedelta(**delta)
        self.now += step
        self.ran += step.total_seconds()

    def jump(self, **delta: float) -> None:
        """Set the wall part forward or back (``timedelta`` keyword arguments, negative
        for back) while no time passes: a suspended laptop, a clock set right."""
        self.now += timedelta(**delta)


class RecordingSleep:
    """An async sleep that returns at once and records what it was asked."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


class SimulatedCrash(BaseException):
    """Raised by `Harness`'s journal after a chosen append (or by `FakeWorld`
    right after a chosen write): the process "dies" there.

    Unit tests of the resume rules use it; crash safety itself is proved with real
    processes by `machines.crashkit.matrix`.
    """


class FakeWorld:
    """A world that counts each effect by key, with a probe that can be made unknown."""

    def __init__(self) -> None:
        self.performed: dict[str, int] = {}
        self.failures: list[Exception] = []
        self.unknown = False
        self.crash_after_write = False

    async def perform(self, key: str) -> dict[str, Any]:
        """Write the effect (or raise the next queued failure)."""
        if self.failures:
            raise self.failures.pop(0)
        self.performed[key] = self.performed.get(key, 0) + 1
        if self.crash_after_write:
            self.crash_after_write = False
            raise SimulatedCrash
        return {"placed": key}

    async def probe(self, key: str) -> Presence:
        """Is the effect with this key in the world?"""
        if self.unknown:
            return "unknown"
        return "present" if self.has(key) else "absent"

    def has(self, key: str) -> bool:
        """The same question, asked of a local record (synchronous)."""
        return bool(self.performed.get(key))


class World(Protocol):
    """What scripted steps need of a world: perform by key, probe by key."""

    async def perform(self, key: str) -> Any:
        """Write the effect with this key."""
        ...

    async def probe(self, key: str) -> Presence:
        """Is the effect with this key in the world?"""
        ...

    def has(self, key: str) -> bool:
        """Is the effect with this key in the local record?"""
        ...


class FlakyError(Exception):
    """An error that says whether a retry may help."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


SEARCH = ToolDecl("search", replay_safe=True)
HANDOFF = ToolDecl("handoff", replay_safe=False)


@dataclass
class ScriptedSteps:
    """Steps driven by a small script: what each step does, for tests.

    gather returns the inputs; think makes ``model_calls`` requests of ``usd`` each
    and calls ``tools`` (name, replay_safe) in order; outcome returns ``decision``
    (``draft``, ``skip``, ``fail``, ``wait``, ``ask``); act places a draft through
    ``world`` (or asks a question). ``hooks[step]`` runs before a step's work, so a
    test can crash, stop or steer at a precise point.
    """

    world: World
    owner: str = "hz-test"
    inputs: dict[str, Any] = field(default_factory=lambda: {"prs": 3})
    model_calls: int = 1
    usd: float = 0.1
    tools: list[ToolDecl] = field(default_factory=list)
    decision: str = "draft"
    wait: Wait | None = None
    probe: str = "world"
    calls: dict[str, int] = field(default_factory=dict)
    tool_runs: dict[str, int] = field(default_factory=dict)
    steers_seen: list[list[Steer]] = field(default_factory=list)
    pins_seen: list[dict[str, Any]] = field(default_factory=list)
    hooks: dict[str, Callable[[TurnContext], Any]] = field(default_factory=dict)
    charge: Callable[[float], None] | None = None
    on_tool: Callable[[str], None] | None = None

    async def _enter(self, step: str, ctx: TurnContext) -> None:
        self.calls[step] = self.calls.get(step, 0) + 1
        self.pins_seen.append(dict(ctx.pins))
        hook = self.hooks.get(step)
        if hook is not None:
            result = hook(ctx)
            if hasattr(result, "__await__"):
                await result

    async def gather(self, ctx: TurnContext) -> Any:
        await self._enter("gather", ctx)
        return dict(self.inputs)

    async def think(self, ctx: TurnContext, gathered: Any) -> Any:
        await self._enter("think", ctx)
        replies = []
        for n in range(self.model_calls):

            async def request(steers: list[Steer], n: int = n) -> ModelReply:
                self.steers_seen.append(steers)
                if self.charge is not None:
                    self.charge(self.usd)
                return ModelReply({"reply": n, "steers": len(steers)}, usd=self.usd, tokens=10)

            replies.append(await ctx.model(request))
        for index, decl in enumerate(self.tools):

            async def call(name: str = decl.name) -> Any:
                self.tool_runs[name] = self.tool_runs.get(name, 0) + 1
                if self.on_tool is not None:
                    self.on_tool(name)
                return {"tool": name}

            replies.append(await ctx.tool(decl, f"call-{index}", {"q": index}, call))
        return {"gathered": gathered, "replies": replies}

    async def outcome(self, ctx: TurnContext, thought: Any) -> Any:
        await self._enter("outcome", ctx)
        if self.decision == "skip":
            return Skip("done-when-unmet")
        if self.decision == "fail":
            return Fail("HZE001")
        if self.decision == "wait" and ctx.woken_by in (None, "recovery"):
            return self.wait or Wait()
        return {"draft": "weekly", "thought": thought}

    def _probe(self) -> Probe | None:
        if self.probe == "world":
            return WorldProbe(self.world.probe)
        if self.probe == "local":
            return LocalProbe(self.world.has)
        return None

    async def act(self, ctx: TurnContext, decided: Any) -> Acted | Wait | Fail:
        await self._enter("act", ctx)
        if self.decision == "ask":
            key = question(self.owner, ctx.turn, 1)
            await ctx.effect(
                Effect("ask", key, self.world.perform, self._probe(), "question.asked")
            )
            return Acted("asked")
        version = int(ctx.pins.get("contract_version") or 1)
        key = place_draft(self.owner, version, "2026-10-30T15:00", "doc:report")
        await ctx.effect(
            Effect(
                "place_draft",
                key,
                self.world.perform,
                self._probe(),
                "draft.placed",
                {"asset": "doc:report"},
            )
        )
        return Acted("drafted", {"report": "placed the weekly section"})


@dataclass
class Harness:
    """A clock, a fake world, an in-memory journal and body, scripted steps and settings."""

    clock: ManualClock
    world: FakeWorld
    journal: InMemoryJournal
    body: InMemoryBody
    steps: ScriptedSteps
    settings: Settings
    crash_after: int | None = None
    appends: int = 0

    @classmethod
    def make(cls, *, max_resumes: int = 3, **steps: Any) -> Harness:
        """A fresh harness; ``steps`` are `ScriptedSteps` fields."""
        clock = ManualClock()
        world = FakeWorld()
        holder: list[Harness] = []

        def durable(event: Any) -> None:
            holder[0]._durable(event)

        journal = InMemoryJournal(clock, on_durable=[durable])
        harness = cls(
            clock=clock,
            world=world,
            journal=journal,
            body=InMemoryBody(),
            steps=ScriptedSteps(world, **steps),
            settings=Settings(clock=clock, sleep=RecordingSleep(), max_resumes=max_resumes),
        )
        holder.append(harness)
        return harness

    def _durable(self, _event: Any) -> None:
        self.appends += 1
        if self.crash_after is not None and self.appends >= self.crash_after:
            self.crash_after = None
            raise SimulatedCrash

    def start(
        self, turn: str = "t1", wakes: list[Wake] | None = None, pins: Pins | None = None
    ) -> TurnState:
        """Start a turn and drive it (a `SimulatedCrash` propagates)."""
        wakes = wakes or [Wake("schedule", schedule(self.steps.owner, "2026-10-30T15:00"))]
        return asyncio.run(
            start_turn(
                self.journal,
                self.body,
                self.steps,
                self.settings,
                turn=turn,
                wakes=wakes,
                pins=pins or Pins(contract_version=1),
            )
        )

    def resume(self, turn: str = "t1", woken_by: str = "recovery") -> TurnState:
        """Resume a turn (after a simulated crash or a wait)."""
        return asyncio.run(
            resume_turn(
                self.journal, self.body, self.steps, self.settings, turn=turn, woken_by=woken_by
            )
        )

    def kinds(self, turn: str = "t1") -> list[str]:
        """The kinds of a turn's events, in order."""
        return [e.kind for e in self.journal.turn_events(turn)]
