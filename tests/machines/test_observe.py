"""What a host observes of its turns: the exception itself, ``on_error``,
``on_checkpoint``, and OpenTelemetry spans (the SDK's in-memory exporter)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from ledger.event import Event
from ledger.spine import Spine
from machines.core.context import TurnContext
from machines.core.effects import EffectFailed
from machines.core.resume import Pins, start_turn
from machines.core.runner import Settings
from machines.core.session import Session
from machines.crashkit.testing import (
    FakeWorld,
    FlakyError,
    Harness,
    ManualClock,
    RecordingSleep,
    ScriptedSteps,
    SimulatedCrash,
)
from machines.keys import Wake
from machines.stores.disk_body import DiskBody
from machines.stores.spine_journal import SpineJournal
from machines.telemetry.observe import StepId
from machines.telemetry.otel import Tracing

WAKE = [Wake("asked", "hz-test@r1")]


class Broke(Exception):
    """A host's own error, with something only the object carries."""

    def __init__(self, detail: dict[str, Any]) -> None:
        super().__init__("the think step broke")
        self.detail = detail


def breaks(_ctx: TurnContext) -> None:
    raise Broke({"row": 7})


class TestErrors:
    def test_the_returned_state_carries_the_exception_and_on_error_gets_it(self) -> None:
        """A step that raises: the turn fails with the class name on the spine, the state
        returned to the host holds the exception object (traceback included), and
        ``on_error`` is called once with it and the step's identity."""
        h = Harness.make()
        h.steps.hooks["think"] = breaks
        seen: list[tuple[BaseException, StepId]] = []
        session = Session(
            h.journal, h.body, h.steps, h.settings, on_error=lambda e, at: seen.append((e, at))
        )
        state = asyncio.run(session.start("t1", WAKE, Pins(1)))
        assert (state.state, state.error) == ("failed", "Broke")
        assert isinstance(state.exception, Broke) and state.exception.detail == {"row": 7}
        assert state.exception.__traceback__ is not None
        assert seen == [(state.exception, StepId("t1", "think", "hz-test@r1", "asked"))]

    def test_a_failed_effect_is_coded_on_the_spine_and_whole_for_the_host(self) -> None:
        """An effect whose world refused it (not retryable): ``effect.failed`` and the
        turn failed HZM021, while the host's hook gets the `EffectFailed` chained to the
        world's own exception."""
        h = Harness.make()
        h.world.failures.append(FlakyError("the calendar said no", retryable=False))
        seen: list[tuple[BaseException, StepId]] = []
        session = Session(
            h.journal, h.body, h.steps, h.settings, on_error=lambda e, at: seen.append((e, at))
        )
        state = asyncio.run(session.start("t1", WAKE, Pins(1)))
        assert (state.state, state.error) == ("failed", "HZM021")
        [(error, where)] = seen
        assert isinstance(error, EffectFailed) and error is state.exception
        assert where.step == "act"
        assert isinstance(error.__cause__ or error.__context__, FlakyError)

    def test_a_hook_that_raises_does_not_change_the_turn(self) -> None:
        """A broken ``on_error`` or ``on_checkpoint`` is the host's bug, not the turn's end."""

        def bad(*_args: object) -> None:
            raise RuntimeError("hook bug")

        h = Harness.make()
        session = Session(h.journal, h.body, h.steps, h.settings, on_checkpoint=bad)
        state = asyncio.run(session.start("t1", WAKE, Pins(1)))
        assert (state.state, state.disposition) == ("finished", "drafted")


class TestCheckpoints:
    def test_on_checkpoint_receives_every_journalled_event_in_order(self) -> None:
        """Every event of the turn, steering included, once each, in journal order, each
        already in the journal when the hook sees it."""
        h = Harness.make()
        seen: list[Event] = []

        def checkpoint(event: Event) -> None:
            assert h.journal.events[-1] == event  # appended (durable) before the hook
            seen.append(event)

        session = Session(h.journal, h.body, h.steps, h.settings, on_checkpoint=checkpoint)
        h.steps.hooks["think"] = lambda _ctx: session.message("r2", "sha256:m", "hz-test@r2")
        asyncio.run(session.start("t1", WAKE, Pins(1)))
        assert seen == list(h.journal.events)
        assert [e.kind for e in seen][:3] == ["turn.started", "step.started", "turn.steered"]


class Spans:
    """The spans an in-memory exporter received, by name."""

    def __init__(self, exporter: InMemorySpanExporter, provider: TracerProvider) -> None:
        self.exporter = exporter
        self.provider = provider

    def by_name(self) -> dict[str, ReadableSpan]:
        return {span.name: span for span in self.exporter.get_finished_spans()}


def traced(h: Harness) -> tuple[Spans, Session]:
    """A session over the harness whose settings trace to an in-memory exporter."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    settings = replace(h.settings, observers=(Tracing(provider),))
    return Spans(exporter, provider), Session(h.journal, h.body, h.steps, settings)


class TestOpenTelemetry:
    def test_a_turn_and_each_step_make_a_span_with_key_cause_disposition_and_cost(
        self,
    ) -> None:
        """One ``turn`` span and a span per step inside it; the turn's carries key,
        cause, disposition and cost, the think step's its own spend."""
        h = Harness.make(model_calls=2, usd=0.25)
        spans, session = traced(h)
        asyncio.run(session.start("t1", WAKE, Pins(1)))
        named = spans.by_name()
        assert sorted(named) == [
            "turn",
            "turn.act",
            "turn.finish",
            "turn.gather",
            "turn.outcome",
            "turn.think",
        ]
        turn = named["turn"]
        assert dict(turn.attributes or {}) == {
            "machines.turn": "t1",
            "machines.key": "hz-test@r1",
            "machines.cause": "asked",
            "machines.state": "finished",
            "machines.disposition": "drafted",
            "machines.cost_usd": 0.5,
        }
        think = named["turn.think"]
        assert think.parent is not None and think.parent.span_id == turn.context.span_id
        assert (think.attributes or {})["machines.step"] == "think"
        assert (think.attributes or {})["machines.cost_usd"] == 0.5
        assert (named["turn.act"].attributes or {})["machines.cost_usd"] == 0.0
        assert turn.status.status_code is StatusCode.UNSET

    def test_a_step_that_raises_marks_its_span_and_the_turns_as_errors(self) -> None:
        """The failing step's span records the exception; the turn's ends failed."""
        h = Harness.make()
        h.steps.hooks["think"] = breaks
        spans, session = traced(h)
        asyncio.run(session.start("t1", WAKE, Pins(1)))
        named = spans.by_name()
        assert "turn.outcome" not in named
        think, turn = named["turn.think"], named["turn"]
        assert think.status.status_code is StatusCode.ERROR
        assert [e.name for e in think.events] == ["exception"]
        assert (think.events[0].attributes or {})["exception.type"].endswith("Broke")
        assert turn.status.status_code is StatusCode.ERROR
        assert (turn.attributes or {})["machines.disposition"] == "failed"
        assert (turn.attributes or {})["machines.error"] == "Broke"

    def test_a_hosts_own_span_in_a_step_nests_under_the_steps(self) -> None:
        """The step's span is current while it runs."""
        h = Harness.make()
        spans, session = traced(h)
        tracer = spans.provider.get_tracer("host")

        def own(_ctx: TurnContext) -> None:
            with tracer.start_as_current_span("host.lookup"):
                pass

        h.steps.hooks["gather"] = own
        asyncio.run(session.start("t1", WAKE, Pins(1)))
        named = spans.by_name()
        parent = named["host.lookup"].parent
        assert parent is not None and parent.span_id == named["turn.gather"].context.span_id


NO_OTEL = """
import json, sys
from machines.core.resume import Pins
from machines.core.session import Session
from machines.crashkit.testing import Harness
from machines.keys import Wake
from machines.core.loop import run_sync

h = Harness.make()
state = run_sync(Session(h.journal, h.body, h.steps, h.settings).start(
    "t1", [Wake("asked", "hz-test@r1")], Pins(1)))
print(json.dumps([state.state, sorted(m for m in sys.modules if "opentelemetry" in m)]))
"""


def test_a_host_without_tracing_never_imports_opentelemetry() -> None:
    """Tracing costs nothing until the host turns it on: no OpenTelemetry module is
    loaded by a turn run without it (in a fresh process)."""
    done = subprocess.run(
        [sys.executable, "-c", NO_OTEL], capture_output=True, text=True, check=True, timeout=60
    )
    assert json.loads(done.stdout) == ["finished", []]


@pytest.mark.parametrize("module", ["machines.telemetry.otel"])
def test_the_tracing_module_is_the_one_that_imports_it(module: str) -> None:
    """The scan above can fail: importing the tracing module loads OpenTelemetry."""
    script = f"import sys, {module}; print(any('opentelemetry' in m for m in sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "True"


class TestOnARealSpine:
    def test_a_resumed_turn_is_a_span_of_its_own_and_its_checkpoints_are_the_files(
        self, tmp_path: Path
    ) -> None:
        """A turn killed after its think checkpoint on a spine and a `DiskBody`, then
        resumed by a traced `Session` in a fresh journal: one ``turn`` span for the
        resume (its recovery and the steps left), and every event ``on_checkpoint``
        saw is a line of the file as read back."""
        clock, world = ManualClock(), FakeWorld()
        steps = ScriptedSteps(world, owner="hz-s")
        settings = Settings(clock=clock, sleep=RecordingSleep(), monotonic=clock.monotonic)
        count = [0]

        def crash(_event: object) -> None:
            count[0] += 1
            if count[0] == 3:  # turn.started, step.started think, model.request
                raise SimulatedCrash

        body = DiskBody(tmp_path / "turns")
        with (
            Spine.open(tmp_path, clock=clock, on_durable=[crash]) as spine,
            pytest.raises(SimulatedCrash),
        ):
            asyncio.run(
                start_turn(
                    SpineJournal.open(spine),
                    body,
                    steps,
                    settings,
                    turn="t1",
                    wakes=WAKE,
                    pins=Pins(1),
                )
            )
        exporter, provider = InMemorySpanExporter(), TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        seen: list[Event] = []
        traced = replace(settings, observers=(Tracing(provider),))
        with Spine.open(tmp_path, clock=clock) as spine:
            journal = SpineJournal.open(spine)
            session = Session(journal, body, steps, traced, on_checkpoint=seen.append)
            state = asyncio.run(session.resume("t1"))
            on_file = journal.turn_events("t1")
        assert state is not None and (state.state, state.disposition) == ("finished", "drafted")
        assert seen == on_file[3:] and seen[0].kind == "turn.resumed"
        spans = exporter.get_finished_spans()
        assert [s.name for s in spans if s.name == "turn"] == ["turn"]
        assert sorted(s.name for s in spans if s.name != "turn") == [
            "turn.act",
            "turn.finish",
            "turn.outcome",
            "turn.think",
        ]
