"""Resume: continue from the last checkpoint, resolve effects, count resumes, timeouts."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from machines.core.fold import fold
from machines.core.resume import Pins, skip_turn
from machines.crashkit.testing import HANDOFF, SEARCH, Harness, SimulatedCrash
from machines.errors import MachineError
from machines.keys import Wake, asked

CLEAN_APPENDS = 10


def crashed(after: int, **steps: object) -> Harness:
    h = Harness.make(**steps)  # type: ignore[arg-type]
    h.crash_after = after
    with pytest.raises(SimulatedCrash):
        h.start()
    return h


class TestResume:
    @pytest.mark.parametrize("after", range(1, CLEAN_APPENDS))
    def test_a_turn_crashed_at_any_append_finishes_with_one_effect_and_one_spend(
        self, after: int
    ) -> None:
        """Whatever the boundary, resume ends drafted with one placement and 0.1 USD."""
        h = crashed(after)
        state = h.resume()
        assert (state.state, state.disposition) == ("finished", "drafted")
        assert list(h.world.performed.values()) == [1]
        assert state.spend_usd == 0.1

    def test_resume_continues_from_the_last_checkpoint(self) -> None:
        """A crash after the act checkpoint reruns act only, not gather or think."""
        h = crashed(after=6)
        h.resume()
        assert h.steps.calls == {"gather": 1, "think": 1, "outcome": 1, "act": 2}

    def test_a_crash_after_effect_started_probes_then_performs_once(self) -> None:
        """started without outcome and absent in the world: performed once."""
        h = crashed(after=6)
        h.resume()
        assert list(h.world.performed.values()) == [1]

    def test_a_performed_effect_found_by_the_probe_is_not_performed_again(self) -> None:
        """started, performed, crash: the probe finds it and effect.done is recorded."""
        h = crashed(after=6)
        key = next(iter(h.journal.turn_events("t1")[-1:])).key
        assert key is not None
        h.world.performed[key] = 1
        h.resume()
        done = [e for e in h.journal.turn_events("t1") if e.kind == "effect.done"]
        assert h.world.performed[key] == 1 and done[0].data["probed"] is True

    def test_an_unknown_probe_performs_nothing_and_keeps_the_turn_open(self) -> None:
        """unknown raises HZM020; nothing is performed; the turn stays resumable."""
        h = crashed(after=6)
        h.world.unknown = True
        with pytest.raises(MachineError, match="HZM020"):
            h.resume()
        assert h.world.performed == {}
        h.world.unknown = False
        assert h.resume().disposition == "drafted"

    def test_resumes_are_counted_durably_and_end_abandoned_past_the_limit(self) -> None:
        """A turn that keeps crashing in act ends abandoned max-resumes with its step."""
        h = crashed(after=5, max_resumes=2)
        for _ in range(2):
            h.crash_after = 1
            with pytest.raises(SimulatedCrash):
                h.resume()
        state = h.resume()
        data = h.journal.turn_events("t1")[-1].data
        assert (state.state, data["reason"], data["step"]) == ("abandoned", "max-resumes", "act")
        assert "3 times" in data["error"]

    def test_a_turn_over_its_timeout_is_abandoned_never_resumed(self) -> None:
        """A turn that ran eleven minutes before its crash is abandoned timeout."""
        h = Harness.make()
        h.steps.hooks["think"] = lambda _ctx: h.clock.advance(minutes=11)
        h.crash_after = 4  # the step.started of outcome, appended at 09:11
        with pytest.raises(SimulatedCrash):
            h.start()
        state = h.resume()
        assert (state.state, state.reason) == ("abandoned", "timeout")
        assert h.steps.calls.get("outcome") is None

    def test_downtime_after_a_crash_does_not_count_against_the_timeout(self) -> None:
        """Killed at 09:00 and resumed at 09:11, a turn that ran seconds resumes."""
        h = crashed(after=3)
        h.clock.advance(minutes=11)
        state = h.resume()
        assert (state.state, state.disposition) == ("finished", "drafted")

    def test_waiting_time_does_not_count_against_the_timeout(self) -> None:
        """A turn that waited a day resumes and finishes within its timeout."""
        h = Harness.make(decision="wait")
        h.start()
        h.clock.advance(days=1)
        state = h.resume(woken_by="timer")
        assert (state.state, state.disposition) == ("finished", "drafted")

    def test_a_final_turn_is_left_alone(self) -> None:
        """Resuming a finished turn appends nothing."""
        h = Harness.make()
        h.start()
        before = len(h.journal.events)
        assert h.resume().state == "finished" and len(h.journal.events) == before

    def test_a_waiting_turn_is_not_resumed_by_recovery(self) -> None:
        """recovery does not wake a waiting turn: only its condition or the user does."""
        h = Harness.make(decision="wait")
        h.start()
        assert h.resume().state == "waiting"

    def test_a_replay_safe_call_interrupted_by_a_crash_runs_again(self) -> None:
        """search was journalled, the process died: resume runs it and records ok."""
        h = crashed(after=4, tools=[SEARCH])
        h.resume()
        results = [e.data for e in h.journal.turn_events("t1") if e.kind == "tool.result"]
        assert h.steps.tool_runs == {"search": 1}
        assert [r["status"] for r in results] == ["ok"]

    def test_an_unsafe_call_interrupted_by_a_crash_gets_an_interrupted_result(self) -> None:
        """handoff was journalled, the process died: it is not run, status interrupted."""
        h = crashed(after=4, tools=[HANDOFF])
        h.resume()
        results = [e.data for e in h.journal.turn_events("t1") if e.kind == "tool.result"]
        assert h.steps.tool_runs == {}
        assert [r["status"] for r in results] == ["interrupted"]

    def test_a_completed_call_is_answered_from_the_body(self) -> None:
        """A call with a recorded result is not run again on resume."""
        h = crashed(after=5, tools=[HANDOFF])
        h.resume()
        assert h.steps.tool_runs == {"handoff": 1}

    def test_a_recorded_model_request_is_not_made_again(self) -> None:
        """Spend is not doubled: the recorded reply comes from the body."""
        h = crashed(after=3, model_calls=2)
        h.resume()
        assert len(h.steps.steers_seen) == 2

    def test_a_resumed_turn_gets_exactly_its_pins(self) -> None:
        """contract_version, skills, lessons_seq and vocabulary come from turn.started."""
        h = Harness.make()
        h.crash_after = 3
        pins = Pins(contract_version=4, skills={"house-style": "sha256:aa"}, lessons_seq=17)
        with pytest.raises(SimulatedCrash):
            h.start(pins=pins)
        h.steps.pins_seen.clear()
        h.resume()
        assert h.steps.pins_seen[-1] == {
            "contract_version": 4,
            "skills": {"house-style": "sha256:aa"},
            "lessons_seq": 17,
            "vocabulary": 2,
        }

    def test_a_turn_without_events_cannot_be_resumed(self) -> None:
        """Resuming an unknown turn is HZM007."""
        with pytest.raises(MachineError, match="HZM007"):
            Harness.make().resume("nope")

    def test_an_unknown_woken_by_is_refused(self) -> None:
        """woken_by outside the vocabulary is HZM006."""
        with pytest.raises(MachineError, match="HZM006"):
            Harness.make().resume(woken_by="moon")

    @pytest.mark.parametrize("after", range(1, CLEAN_APPENDS))
    def test_a_body_lost_mid_turn_is_regained_by_rerunning_the_steps_before(
        self, after: int
    ) -> None:
        """With the body gone (a power cut), the resume reruns the steps whose results were
        lost, records each regained input, and still places the effect once."""
        h = crashed(after)
        h.body.forget("t1")
        state = h.resume()
        assert (state.state, state.disposition) == ("finished", "drafted")
        assert list(h.world.performed.values()) == [1]
        events = h.journal.turn_events("t1")
        regained = [e.data["regained"] for e in events if "regained" in e.data]
        assert all(e.kind == "turn.resumed" for e in events if "regained" in e.data)
        assert regained == sorted(set(regained), key=["think", "outcome", "act", "finish"].index)
        assert state.spend_usd <= 0.2  # think reruns at most once

    def test_a_regained_input_is_the_one_the_next_resume_uses(self) -> None:
        """Killed right after act's input was regained, the next resume (body intact) reruns
        no step before act again."""
        dry = crashed(after=6)
        dry.body.forget("t1")
        dry.resume()
        events = dry.journal.turn_events("t1")
        at = next(n for n, e in enumerate(events, 1) if e.data.get("regained") == "act")
        h = crashed(after=6)
        h.body.forget("t1")
        h.crash_after = h.appends + at - 6
        with pytest.raises(SimulatedCrash):
            h.resume()
        calls = dict(h.steps.calls)
        h.crash_after = None
        state = h.resume()
        assert (state.state, state.disposition) == ("finished", "drafted")
        assert calls["think"] == 2
        assert {k: h.steps.calls[k] for k in ("gather", "think", "outcome")} == {
            k: calls[k] for k in ("gather", "think", "outcome")
        }
        assert list(h.world.performed.values()) == [1]


class TestSkip:
    def test_a_nothing_moved_skip_is_one_line_and_no_step_work(self) -> None:
        """skip_turn writes one turn.skipped and runs no step."""
        h = Harness.make()
        wake = Wake("asked", asked("hz-test", "r1"))
        state = skip_turn(h.journal, turn="t2", wakes=[wake], reason="nothing-moved")
        assert [e.kind for e in h.journal.events] == ["turn.skipped"]
        assert (state.state, state.reason, h.steps.calls) == ("skipped", "nothing-moved", {})
        assert h.journal.events[0].data == {"cause": "asked", "reason": "nothing-moved"}
        assert (state.keys, state.causes) == ([wake.key], [{"cause": "asked", "key": wake.key}])

    def test_an_unknown_skip_reason_is_refused(self) -> None:
        """A reason outside the vocabulary is HZM008 and nothing is written."""
        h = Harness.make()
        with pytest.raises(MachineError, match="HZM008"):
            skip_turn(h.journal, turn="t2", wakes=[Wake("asked", "a@b")], reason="bored")
        assert h.journal.events == ()

    def test_a_skip_needs_a_cause(self) -> None:
        """No wakes is HZM005."""
        with pytest.raises(MachineError, match="HZM005"):
            skip_turn(Harness.make().journal, turn="t2", wakes=[], reason="cap")


class TestFold:
    def test_the_fold_of_a_turn_equals_the_live_state(self) -> None:
        """Folding the journal gives the state the run ended with."""
        h = Harness.make(tools=[SEARCH])
        live = h.start()
        assert fold("t1", h.journal.events) == live


class TestFoldChecksThePath:
    def test_a_recorded_path_the_table_does_not_allow_is_refused(self) -> None:
        """act straight after turn.started is HZM010 with the remedy."""
        h = Harness.make()
        h.journal.append("turn.started", {"cause": "asked"}, turn="t9")
        h.journal.append("step.started", {"step": "act"}, turn="t9")
        with pytest.raises(MachineError) as raised:
            fold("t9", h.journal.events)
        assert raised.value.code == "HZM010" and "hz heinzel retry" in raised.value.hint

    def test_an_unknown_step_is_refused(self) -> None:
        """step.started naming a step this code lacks is HZM010."""
        h = Harness.make()
        h.journal.append("turn.started", {}, turn="t9")
        h.journal.append("step.started", {"step": "review"}, turn="t9")
        with pytest.raises(MachineError, match="HZM010"):
            fold("t9", h.journal.events)

    def test_unknown_kinds_are_skipped(self) -> None:
        """A kind this code does not know is data, not an error."""
        h = Harness.make()
        h.journal.append("turn.started", {}, turn="t9")
        h.journal.append("future.kind", {"x": 1}, turn="t9")
        assert fold("t9", h.journal.events).state == "gather"


class TestToolFailureOnResume:
    def test_a_replayed_unsafe_failure_fails_the_turn_with_hzm022(self) -> None:
        """A step that caught a failing handoff, then crashed, fails on replay with HZM022."""
        h = Harness.make(tools=[HANDOFF])
        h.crash_after = 6

        async def think(ctx: Any, gathered: Any) -> Any:
            async def broken() -> Any:
                raise ValueError("runner died")

            with contextlib.suppress(ValueError):
                await ctx.tool(HANDOFF, "c1", {}, broken)
            return await ctx.tool(HANDOFF, "c2", {}, broken)

        h.steps.think = think  # type: ignore[method-assign]
        with pytest.raises(SimulatedCrash):
            h.start()
        state = h.resume()
        assert (state.state, state.error) == ("failed", "HZM022")
