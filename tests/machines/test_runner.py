"""Driving a turn: checkpoints before work, waits, skips, failures and the timeout."""

from __future__ import annotations

from machines.steps import Wait
from machines.testing import HANDOFF, SEARCH, Harness


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
        """A done-when-unmet skip writes turn.skipped with the causes and keys."""
        h = Harness.make(decision="skip")
        state = h.start()
        skipped = h.journal.turn_events("t1")[-1]
        assert (state.state, skipped.kind, skipped.data["reason"]) == (
            "skipped",
            "turn.skipped",
            "done-when-unmet",
        )
        assert skipped.data["keys"] == ["hz-test@2026-10-30T15:00"]
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
        """Each tool call has tool.called (replay_safe) and tool.result (hash)."""
        h = Harness.make(tools=[SEARCH, HANDOFF])
        h.start()
        called = [dict(e.data) for e in h.journal.turn_events("t1") if e.kind == "tool.called"]
        assert [(c["tool"], c["replay_safe"]) for c in called] == [
            ("search", True),
            ("handoff", False),
        ]
