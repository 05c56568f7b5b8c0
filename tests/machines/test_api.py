"""The short API (machines.api): decorated tools and effects, typed steps, refusals with a
code before anything is journalled, and the explicit API's values checked the same way."""

from __future__ import annotations

import asyncio
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from ledger.spine import Spine
from machines import (
    INTERRUPTED,
    JOBS,
    Acted,
    Host,
    InMemoryBody,
    InMemoryJournal,
    Pins,
    Settings,
    SpineJournal,
    ToolDecl,
    TurnContext,
    TypedSteps,
    Wake,
    effect,
    fold,
    resume_turn,
    start_turn,
    tool,
)
from machines.crashkit.testing import ManualClock, RecordingSleep
from machines.errors import MachineError

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def clock() -> datetime:
    return NOW


class Plan(BaseModel):
    order: str
    amount: int


class Shop(TypedSteps):
    """Typed steps with a replay-safe tool, an unsafe one and an effect; ``value`` is
    what gather returns (to try values that are not JSON or fail their model)."""

    def __init__(self, value: Any = None, data: Any = None) -> None:
        self.value = value
        self.data = data or {}
        self.performed: list[str] = []
        self.ran: list[str] = []

    @tool(replay_safe=True)
    async def lookup(self, order: str) -> int:
        self.ran.append(f"lookup {order}")
        return 250

    @tool(replay_safe=False)
    async def page(self, order: str) -> str:
        self.ran.append(f"page {order}")
        return "paged"

    def sent(self, key: str) -> bool:
        return key in self.performed

    @effect(probe=sent, event="mail.sent")
    async def mail(self, key: str) -> None:
        self.performed.append(key)

    async def gather(self, ctx: TurnContext) -> Plan:
        if self.value is not None:
            return self.value  # type: ignore[no-any-return]
        return Plan(order="o1", amount=await self.lookup("o1") + await self.lookup("o1"))

    async def think(self, ctx: TurnContext, plan: Plan) -> Plan:
        assert isinstance(plan, Plan)  # the body's JSON comes back as the model
        await self.page(plan.order)
        return plan

    async def act(self, ctx: TurnContext, plan: Plan) -> Acted:
        await self.mail(f"shop@mail:{plan.order}")
        return Acted("done", self.data)


def run(steps: Any, on_durable: Any = ()) -> tuple[Any, Any]:
    """One order through a `Host` in memory: its end state and its journal."""
    host = Host(steps, clock=clock, on_durable=on_durable)
    return asyncio.run(host.run("shop@order:o1")), host.journal


class TestDecorators:
    def test_a_turn_on_the_short_api_runs_tools_and_the_effect_once(self) -> None:
        """Call ids by position within the step, the unsafe tool journalled before it
        runs, the effect performed once and recorded under its own event."""
        steps = Shop()
        state, journal = run(steps)
        assert (state.state, state.disposition) == ("finished", "done")
        assert steps.performed == ["shop@mail:o1"]
        calls = [e.data["call_id"] for e in journal.events if e.kind == "tool.result"]
        assert calls == ["gather:lookup:1", "gather:lookup:2", "think:page:1"]
        assert [e.kind for e in journal.events if e.kind == "tool.called"] == ["tool.called"]
        assert [e.key for e in journal.events if e.kind == "mail.sent"] == ["shop@mail:o1"]

    def test_an_unsafe_tool_cut_by_a_crash_reports_interrupted(self) -> None:
        """A crash after the page's tool.called: the resume gets INTERRUPTED, no second page."""

        class Cut(BaseException):
            pass

        def cut(event: Any) -> None:
            if event.kind == "tool.called":
                raise Cut

        host = Host(Shop(), clock=clock, on_durable=[cut])
        with pytest.raises(Cut):
            asyncio.run(host.run("shop@order:o1"))
        journal = InMemoryJournal(clock)
        crashed = getattr(host.journal, "events", ())
        for event in crashed:  # what a restarted process reads back
            journal.append(event.kind, event.data, turn=event.turn, key=event.key)
        turn = str(crashed[0].turn)
        settings = Settings(clock=clock, sleep=RecordingSleep(), vocabulary=JOBS)
        seen: list[Any] = []

        class Watching(Shop):
            async def think(self, ctx: TurnContext, plan: Plan) -> Plan:
                seen.append(await self.page(plan.order))
                return plan

        watching = Watching()
        state = asyncio.run(resume_turn(journal, host.body, watching, settings, turn=turn))
        assert seen == [INTERRUPTED]
        assert "page o1" not in watching.ran
        assert state.state == "finished"

    def test_a_tool_called_outside_a_turn_is_hzm070(self) -> None:
        with pytest.raises(MachineError, match="HZM070"):
            asyncio.run(Shop().lookup("o1"))

    def test_an_effect_without_a_key_or_with_a_machine_kind_is_hzm074(self) -> None:
        with pytest.raises(MachineError, match="HZM074"):

            @effect(probe=None)
            async def send(to: str) -> None: ...

        with pytest.raises(MachineError, match="HZM074"):

            @effect(probe=None, event="effect.done")
            async def other(key: str) -> None: ...


class TestRefusedBeforeJournalled:
    @pytest.mark.parametrize(
        ("value", "code"),
        [
            ({"order": "o1", "amount": "many"}, "HZM072"),
            ({"order": "o1"}, "HZM072"),
        ],
    )
    def test_a_value_failing_its_model_fails_the_turn_before_any_effect(
        self, value: Any, code: str
    ) -> None:
        steps = Shop(value=value)
        state, _ = run(steps)
        assert (state.state, state.error) == ("failed", code)
        assert steps.performed == [] and steps.ran == []

    def test_acted_data_that_is_not_json_is_coded_and_recorded(self) -> None:
        """Known only after act's effect: the effect is recorded done once, the turn
        ends failed HZM071 (not left to be resumed as interrupted)."""
        steps = Shop(data={"at": NOW})
        state, journal = run(steps)
        assert (state.state, state.error) == ("failed", "HZM071")
        assert steps.performed == ["shop@mail:o1"]
        assert [e.kind for e in journal.events][-1] == "turn.finished"

    def test_a_long_report_is_hzm073(self) -> None:
        state, _ = run(Shop(data={"report": "r" * 5000}))
        assert (state.state, state.error) == ("failed", "HZM073")


class Explicit:
    """The explicit API's steps: gather returns ``value``; act performs nothing."""

    def __init__(self, value: Any, data: Any = None) -> None:
        self.value, self.data, self.acted = value, data or {}, 0

    async def gather(self, ctx: TurnContext) -> Any:
        return self.value

    async def think(self, ctx: TurnContext, gathered: Any) -> Any:
        return gathered

    async def outcome(self, ctx: TurnContext, thought: Any) -> Any:
        return thought

    async def act(self, ctx: TurnContext, decided: Any) -> Acted:
        self.acted += 1
        return Acted("drafted", self.data)


@pytest.mark.parametrize(
    "value",
    [{"at": NOW}, {"x": math.nan}, {"x": math.inf}, {1: "int key"}, {"s": {1, 2}}],
    ids=["datetime", "nan", "inf", "int-key", "set"],
)
def test_an_explicit_step_value_that_is_not_json_fails_the_turn_hzm071(
    value: Any, tmp_path: Path
) -> None:
    """Over a real spine: not a bare TypeError, nothing of the value journalled, act never
    runs, and the turn is final (a restart does not resume it as interrupted)."""
    steps = Explicit(value)
    settings = Settings(clock=ManualClock(), sleep=RecordingSleep())
    with Spine.open(tmp_path, clock=clock) as spine:
        journal = SpineJournal.open(spine)
        wakes = [Wake("asked", "hz-s@r1")]
        state = asyncio.run(
            start_turn(
                journal, InMemoryBody(), steps, settings, turn="t1", wakes=wakes, pins=Pins()
            )
        )
        assert (state.state, state.error, steps.acted) == ("failed", "HZM071", 0)
        assert fold("t1", journal.turn_events("t1")).state == "failed"


def test_explicit_acted_data_that_is_not_json_fails_the_turn_hzm071() -> None:
    steps = Explicit({"ok": 1}, data={"at": NOW})
    settings = Settings(clock=ManualClock(), sleep=RecordingSleep())
    journal = InMemoryJournal(clock)
    wakes = [Wake("asked", "hz-s@r1")]
    state = asyncio.run(
        start_turn(journal, InMemoryBody(), steps, settings, turn="t1", wakes=wakes, pins=Pins())
    )
    assert (state.state, state.error, steps.acted) == ("failed", "HZM071", 1)


def test_a_host_on_disk_opens_its_spine_at_first_run_and_a_restart_does_nothing(
    tmp_path: Path,
) -> None:
    """Host(directory) not used as a context manager still keeps its turns on disk (not in
    memory); a second Host over the directory finds the job finished and performs nothing."""
    first = Shop()
    host = Host(first, tmp_path, clock=clock)
    state = asyncio.run(host.run("shop@order:o1"))
    host.close()
    assert state is not None and state.state == "finished"
    assert (tmp_path / "session.jsonl").exists()
    again = Shop()
    with Host(again, tmp_path, clock=clock) as restarted:
        state = asyncio.run(restarted.run("shop@order:o1"))
    assert state is not None and (state.state, state.disposition) == ("finished", "done")
    assert again.performed == [] and again.ran == []


class ToolSteps(Explicit):
    """Explicit steps whose think calls a tool through ctx.tool with ``args`` and ``result``."""

    def __init__(self, args: Any, result: Any, safe: bool) -> None:
        super().__init__({"ok": 1})
        self.args, self.result, self.safe = args, result, safe

    async def think(self, ctx: TurnContext, gathered: Any) -> Any:
        async def call() -> Any:
            return self.result

        await ctx.tool(ToolDecl("t", self.safe), "c1", self.args, call)
        return gathered


@pytest.mark.parametrize(
    ("args", "result", "safe"),
    [({"at": NOW}, 1, False), ({}, {"at": NOW}, False), ({}, math.nan, True)],
    ids=["unsafe-args", "unsafe-result", "safe-nan-result"],
)
def test_an_explicit_tool_call_that_is_not_json_fails_the_turn_hzm071(
    args: Any, result: Any, safe: bool
) -> None:
    """Not a bare TypeError reduced to its class name: HZM071, and act never runs."""
    steps = ToolSteps(args, result, safe)
    settings = Settings(clock=ManualClock(), sleep=RecordingSleep())
    wakes = [Wake("asked", "hz-s@r1")]
    state = asyncio.run(
        start_turn(
            InMemoryJournal(clock),
            InMemoryBody(),
            steps,
            settings,
            turn="t1",
            wakes=wakes,
            pins=Pins(),
        )
    )
    assert (state.state, state.error, steps.acted) == ("failed", "HZM071", 0)
