"""Driving a turn: checkpoints before work, waits, skips, failures and the timeout."""

from __future__ import annotations

import asyncio

import pytest

from ledger.event import Event
from machines.core.fold import TurnState
from machines.core.resume import Pins, start_turn
from machines.core.runner import TurnRun
from machines.core.steps import Acted, Skip, Wait
from machines.crashkit.testing import HANDOFF, SEARCH, Harness, SimulatedCrash
from machines.errors import MachineError
from machines.keys import Wake
from machines.stores.journal import InMemoryJournal

WAKES = [Wake("asked", "hz-test@r1")]


class TestRun:
    def test_a_turn_walks_the_five_steps_with_checkpoints_before_work(self) -> None:
        """A drafting turn writes its checkpoints, the effect ledger and turn.finished."""
        h = Harness.make()
        state = h.start()
        assert h.kinds() == [
            "turn.started",
            "step.started",
            "model.request",
            "step.started",
            "step.started",
            "effect.started",
            "effect.done",
            "draft.placed",
            "step.started",
            "turn.finished",
        ]
        assert (state.state, state.disposition, state.spend_usd) == ("finished", "drafted", 0.1)

    def test_the_spine_holds_hashes_not_content(self) -> None:
        """Step results and replies are in the body; the spine has their hashes."""
        h = Harness.make(inputs={"prs": "SECRET-INPUT"})
        h.start()
        assert "SECRET-INPUT" not in str([dict(e.data) for e in h.journal.events])
        step = h.journal.turn_events("t1")[1]
        assert h.body.get("t1", step.data["input"]) == {"prs": "SECRET-INPUT"}

    def test_turn_finished_records_cost_duration_and_the_act_data(self) -> None:
        """turn.finished carries disposition, usd, duration and the act's report."""
        h = Harness.make(model_calls=2, usd=0.2)
        h.start()
        finished = h.journal.turn_events("t1")[-1].data
        assert (finished["usd"], finished["duration_ms"], finished["report"]) == (
            0.4,
            0,
            "placed the weekly section",
        )

    def test_a_wait_ends_the_run_and_records_until_and_on(self) -> None:
        """outcome returning Wait appends turn.waiting and runs nothing more."""
        wait = Wait(on={"kind": "answer", "key": "q1"})
        h = Harness.make(decision="wait", wait=wait)
        state = h.start()
        waiting = h.journal.turn_events("t1")[-1]
        assert state.state == "waiting"
        assert dict(waiting.data) == {
            "step": "outcome",
            "until": "2026-11-06T15:00:00.000Z",
            "on": {"kind": "answer", "key": "q1"},
        }
        assert "act" not in h.steps.calls

    def test_a_bad_wait_condition_fails_with_a_code(self) -> None:
        """An on condition of an unknown kind is HZM030 and the turn fails."""
        h = Harness.make(decision="wait", wait=Wait(on={"kind": "moon"}))
        state = h.start()
        assert (state.state, state.error) == ("failed", "HZM030")

    def test_a_skip_from_outcome_is_final_and_acts_not(self) -> None:
        """A done-when-unmet skip writes turn.skipped; its keys stay turn.started's."""
        h = Harness.make(decision="skip")
        state = h.start()
        skipped = h.journal.turn_events("t1")[-1]
        assert (state.state, skipped.kind, skipped.data["reason"]) == (
            "skipped",
            "turn.skipped",
            "done-when-unmet",
        )
        assert state.keys == ["hz-test@2026-10-30T15:00"]
        assert "keys" not in skipped.data and "causes" not in skipped.data
        assert "act" not in h.steps.calls

    def test_a_failed_outcome_ends_failed_with_the_step(self) -> None:
        """Fail from outcome ends the turn failed in outcome."""
        h = Harness.make(decision="fail")
        state = h.start()
        data = h.journal.turn_events("t1")[-1].data
        assert (state.state, data["step"], data["error"]) == ("failed", "outcome", "HZE001")

    def test_a_step_that_raises_fails_the_turn_with_the_class_name(self) -> None:
        """An exception in a step is a failed turn, not a traceback."""

        def boom(ctx: object) -> None:
            raise ValueError("no")

        h = Harness.make(hooks={"think": boom})
        state = h.start()
        assert (state.state, state.error) == ("failed", "ValueError")

    def test_running_past_the_timeout_abandons_between_steps(self) -> None:
        """A think that runs 11 minutes ends abandoned timeout before outcome runs."""
        h = Harness.make()
        h.steps.hooks["think"] = lambda ctx: h.clock.advance(minutes=11)
        state = h.start()
        assert (state.state, state.reason) == ("abandoned", "timeout")
        assert "outcome" not in h.steps.calls

    def test_tools_are_recorded_with_their_replay_safety(self) -> None:
        """An unsafe call has tool.called before it; a replay-safe one only its tool.result,
        which names the tool and its replay safety; both results carry a hash."""
        h = Harness.make(tools=[SEARCH, HANDOFF])
        h.start()
        events = h.journal.turn_events("t1")
        called = [dict(e.data) for e in events if e.kind == "tool.called"]
        results = [dict(e.data) for e in events if e.kind == "tool.result"]
        assert [(c["tool"], c["replay_safe"]) for c in called] == [("handoff", False)]
        assert [(r.get("tool"), r.get("replay_safe"), r["status"]) for r in results] == [
            ("search", True, "ok"),
            (None, None, "ok"),
        ]
        assert all(r["hash"] for r in results)


class TestCodedFailures:
    def test_an_act_without_a_known_disposition_fails_hzm014(self) -> None:
        """act must return Acted with drafted, asked, learned or proposed."""
        h = Harness.make()

        async def bad_act(ctx: object, decided: object) -> object:
            return {"done": True}

        h.steps.act = bad_act  # type: ignore[method-assign]
        state = h.start()
        assert (state.state, state.error) == ("failed", "HZM014")

    def test_an_effect_left_without_outcome_fails_hzm015(self) -> None:
        """A resumed act that no longer performs its started effect cannot finish."""
        h = Harness.make()
        h.crash_after = 6
        with pytest.raises(SimulatedCrash):
            h.start()

        async def forgetful_act(ctx: object, decided: object) -> Acted:
            return Acted("drafted")

        h.steps.act = forgetful_act  # type: ignore[method-assign]
        state = h.resume()
        assert (state.state, state.error) == ("failed", "HZM015")

    def test_a_tool_recorded_under_another_name_is_hzm011(self) -> None:
        """Replaying call-0 as a different tool is refused with the remedy."""
        h = Harness.make(tools=[SEARCH])
        h.crash_after = 4  # right after call-0's tool.result, still in think
        with pytest.raises(SimulatedCrash):
            h.start()
        h.steps.tools = [HANDOFF]
        with pytest.raises(MachineError) as raised:
            h.resume()
        assert raised.value.code == "HZM011" and "hz heinzel retry" in raised.value.hint

    def test_a_live_state_that_leaves_its_fold_is_hzm012(self) -> None:
        """A journal that drops the turn id breaks the fixed point and is caught."""
        h = Harness.make()

        class Lying(InMemoryJournal):
            def append(self, kind: str, data: object = None, **kw: object) -> Event:  # type: ignore[override]
                kw["turn"] = None
                return super().append(kind, data, **kw)  # type: ignore[arg-type]

        with pytest.raises(MachineError, match="HZM012"):
            asyncio.run(
                start_turn(
                    Lying(h.clock),
                    h.body,
                    h.steps,
                    h.settings,
                    turn="t1",
                    wakes=WAKES,
                    pins=Pins(1),
                )
            )

    def test_a_run_without_steps_or_body_is_hzm016(self) -> None:
        """Driving a run built without steps is a coded error."""
        h = Harness.make()
        run = TurnRun(h.journal, None, None, h.settings, TurnState("t1"))
        run.fire("start", {})
        with pytest.raises(MachineError, match="HZM016"):
            asyncio.run(run.drive())


class TestStepResults:
    def test_an_until_that_is_not_a_time_fails_hzm030(self) -> None:
        """Wait(until='soon') is refused and the turn fails."""
        h = Harness.make(decision="wait", wait=Wait(until="soon"))
        assert h.start().error == "HZM030"

    def test_an_until_is_recorded_in_utc(self) -> None:
        """An offset time is normalised to the spine's UTC form."""
        h = Harness.make(decision="wait", wait=Wait(until="2026-11-02T13:00:00+01:00"))
        h.start()
        assert h.journal.events[-1].data["until"] == "2026-11-02T12:00:00.000Z"

    def test_a_skip_with_an_unknown_reason_fails_hzm008(self) -> None:
        """Skip('bored') from outcome fails the turn instead of writing a bad line."""
        h = Harness.make()

        async def bored(ctx: object, thought: object) -> Skip:
            return Skip("bored")

        h.steps.outcome = bored  # type: ignore[method-assign]
        assert h.start().error == "HZM008"

    def test_a_skip_from_think_fails_hzm001(self) -> None:
        """Only outcome may skip a started turn."""
        h = Harness.make()

        async def skip(ctx: object, gathered: object) -> Skip:
            return Skip("cap")

        h.steps.think = skip  # type: ignore[method-assign]
        state = h.start()
        assert (state.state, state.error) == ("failed", "HZM001")
