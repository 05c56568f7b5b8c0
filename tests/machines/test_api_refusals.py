"""Issue 40, item 4: ``@effect(probe_first=True)``; annotated steps refuse what plain JSON
cannot carry (HZM071) instead of coercing it; the crash matrix fails a scenario whose
clean run does not finish; ``wake(data=)`` cannot set the turn's keys or parent
(HZM092); act-time refusals reach the host with their message and exception."""

from __future__ import annotations

import asyncio
import math
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from ledger.reading import read_events
from machines import (
    JOBS,
    Acted,
    Host,
    InMemoryBody,
    InMemoryJournal,
    Pins,
    Session,
    Settings,
    TurnContext,
    TypedSteps,
    Wake,
    effect,
)
from machines.crashkit.matrix import Rig
from machines.errors import MachineError

ROOT = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def clock() -> datetime:
    return NOW


class Mail(TypedSteps):
    """One job; act mails once. ``already`` is what the world holds before the run."""

    def __init__(self, already: set[str] | None = None, probe_first: bool = True) -> None:
        self.world = set(already or ())
        self.performed: list[str] = []
        self.probe_first = probe_first

    def seen(self, key: str) -> bool:
        return key in self.world

    async def _send(self, key: str) -> None:
        self.world.add(key)
        self.performed.append(key)

    @effect(probe=seen, event="mail.sent", probe_first=True)
    async def first(self, key: str) -> None:
        await self._send(key)

    @effect(probe=seen, event="mail.sent")
    async def plain(self, key: str) -> None:
        await self._send(key)

    async def gather(self, ctx: TurnContext) -> dict[str, str]:
        return {"job": ctx.key}

    async def act(self, ctx: TurnContext, value: dict[str, str]) -> Acted:
        send = self.first if self.probe_first else self.plain
        await send("bot@mail:1")
        return Acted("done")


class TestProbeFirst:
    def test_an_effect_the_world_already_holds_is_recorded_not_performed(
        self, tmp_path: Path
    ) -> None:
        """probe_first=True: the probe is asked before the first perform, and finds the
        e-mail sent (as by spine lines since lost): recorded done, never sent again."""
        steps = Mail(already={"bot@mail:1"})
        with Host(steps, tmp_path, clock=clock) as host:
            state = asyncio.run(host.run("bot@job:1"))
        assert state is not None and state.state == "finished"
        assert steps.performed == []
        done = [e for e in read_events(tmp_path / "session.jsonl") if e.kind == "effect.done"]
        assert [e.data.get("probed") for e in done] == [True]

    def test_without_it_the_first_perform_asks_no_probe(self, tmp_path: Path) -> None:
        """The same world without probe_first: a new key is performed at once."""
        steps = Mail(already={"bot@mail:1"}, probe_first=False)
        with Host(steps, tmp_path, clock=clock) as host:
            asyncio.run(host.run("bot@job:1"))
        assert steps.performed == ["bot@mail:1"]

    def test_probe_first_without_a_probe_is_hzm076_when_declared(self) -> None:
        with pytest.raises(MachineError) as caught:

            @effect(probe=None, probe_first=True)
            async def send(key: str) -> None:
                return None

        assert caught.value.code == "HZM076"


class Reading(BaseModel):
    level: float


class Coerced(TypedSteps):
    """gather returns ``value`` under the annotation ``dict``; act mails once."""

    def __init__(self, value: Any) -> None:
        self.value = value
        self.acted = 0

    async def gather(self, ctx: TurnContext) -> dict:  # type: ignore[type-arg]
        return dict(self.value)

    async def act(self, ctx: TurnContext, value: Any) -> Acted:
        self.acted += 1
        return Acted("done")


class IntKeys(Coerced):
    async def gather(self, ctx: TurnContext) -> dict[int, str]:
        return dict(self.value)


class ModelStep(Coerced):
    async def gather(self, ctx: TurnContext) -> Reading:
        return Reading(level=self.value)


def run_one(steps: Any) -> Any:
    host = Host(steps, clock=clock)
    return asyncio.run(host.run("bot@job:1"))


class TestNoCoercion:
    @pytest.mark.parametrize(
        ("value", "lost"),
        [({"x": math.nan}, "nan"), ({"x": {1, 2}}, "a set"), ({1: "a"}, "the key 1")],
        ids=["nan", "set", "int-key"],
    )
    def test_a_step_annotated_dict_refuses_what_json_would_change(
        self, value: Any, lost: str
    ) -> None:
        """Before: NaN became null, a set a list, 1 the key "1", and the turn went on."""
        steps = Coerced(value)
        state = run_one(steps)
        assert (state.state, state.error, steps.acted) == ("failed", "HZM071", 0)
        assert lost in state.exception.message

    def test_a_model_field_holding_nan_is_refused(self) -> None:
        steps = ModelStep(math.inf)
        state = run_one(steps)
        assert (state.state, state.error, steps.acted) == ("failed", "HZM071", 0)

    def test_a_type_that_brings_the_value_back_passes(self) -> None:
        """dict[int, str]: the key comes back as the int it was; a finite model passes."""
        assert run_one(IntKeys({1: "a"})).state == "finished"
        assert run_one(ModelStep(2.5)).state == "finished"


class ActRefusals(TypedSteps):
    def __init__(self, acted: Acted) -> None:
        self.acted = acted
        self.errors: list[BaseException] = []

    async def gather(self, ctx: TurnContext) -> dict[str, str]:
        return {"job": ctx.key}

    async def act(self, ctx: TurnContext, value: Any) -> Acted:
        return self.acted


class TestActRefusals:
    @pytest.mark.parametrize(
        ("acted", "code", "said"),
        [
            (Acted("done", {"at": NOW}), "HZM071", "datetime"),
            (Acted("done", {"report": "x" * 5000}), "HZM073", "report"),
            (Acted("shipped"), "HZM014", "'shipped'"),
        ],
        ids=["not-json", "too-long", "unknown-disposition"],
    )
    def test_the_host_gets_the_message_and_the_exception(
        self, acted: Acted, code: str, said: str
    ) -> None:
        """Before: only the code on the state; now state.exception is the refusal itself
        (its message says what), and on_error is told."""
        steps = ActRefusals(acted)
        told: list[BaseException] = []
        host = Host(steps, clock=clock, on_error=lambda error, where: told.append(error))
        state = asyncio.run(host.run("bot@job:1"))
        assert state is not None and (state.state, state.error) == ("failed", code)
        assert isinstance(state.exception, MachineError)
        assert state.exception.code == code and said in state.exception.message
        assert told == [state.exception]


class TestWakeData:
    @pytest.mark.parametrize("name", ["keys", "parent", "cause", "pins"])
    def test_wake_data_that_sets_what_the_machine_writes_is_hzm092(self, name: str) -> None:
        """Before: data={"keys": [...]} replaced the turn's keys (the key rule then lost
        the job) and data={"parent": ...} made a turn look like a fork; now refused,
        before anything is written."""
        journal = InMemoryJournal(clock)
        settings = Settings(clock=clock, sleep=asyncio.sleep, vocabulary=JOBS)
        session = Session(journal, InMemoryBody(), ActRefusals(Acted("done")), settings)
        wake = Wake("job", "bot@job:1", JOBS)
        with pytest.raises(MachineError) as caught:
            asyncio.run(session.wake([wake], turn="t1", pins=Pins(), data={name: ["x"]}))
        assert caught.value.code == "HZM092" and name in caught.value.message
        assert list(journal.events) == []

    def test_data_of_the_hosts_own_names_goes_on_turn_started(self) -> None:
        journal = InMemoryJournal(clock)
        settings = Settings(clock=clock, sleep=asyncio.sleep, vocabulary=JOBS)
        session = Session(journal, InMemoryBody(), ActRefusals(Acted("done")), settings)
        wake = Wake("job", "bot@job:1", JOBS)
        asyncio.run(session.wake([wake], turn="t1", pins=Pins(), data={"ticket": "T1"}))
        assert journal.events[0].data["ticket"] == "T1"


class Stuck(TypedSteps):
    """gather is cancelled: the turn ends abandoned (stopped) in gather."""

    async def gather(self, ctx: TurnContext) -> dict[str, str]:
        raise asyncio.CancelledError

    async def act(self, ctx: TurnContext, value: Any) -> Acted:
        return Acted("done")


async def abandoned(rig: Rig) -> Any:
    """A scenario whose clean run is abandoned in gather."""
    from dataclasses import replace

    settings = replace(rig.settings, vocabulary=JOBS)
    wakes = [Wake("job", "bot@job:1", JOBS)]
    return await rig.run(
        rig.journal(), Stuck(), turn="t1", wakes=wakes, pins=Pins(), settings=settings
    )


def test_the_crash_matrix_fails_a_scenario_whose_clean_run_does_not_finish(
    tmp_path: Path,
) -> None:
    """Before: "0 failures", exit 0, for a clean run abandoned in gather."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "machines.crashkit.matrix",
            "tests.machines.test_api_refusals:abandoned",
            "--root",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "clean run did not finish: it ended abandoned (stopped)" in done.stdout
