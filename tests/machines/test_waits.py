"""Waits: the pure decision of which waiting turns wake and why."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from ledger.event import Event
from machines.core.fold import fold
from machines.core.resume import Pins, supersede
from machines.core.steps import Wait
from machines.core.waits import Due, Facts, PendingWait, check_wait, due_waits
from machines.crashkit.testing import Harness
from machines.errors import MachineError

NOW = datetime(2026, 11, 2, 12, 0, tzinfo=UTC)


def wait(
    on: dict[str, str] | None = None, until: str = "2026-11-09T00:00:00.000Z", **kw: object
) -> PendingWait:
    return PendingWait(turn="t1", step="outcome", until=until, seq=5, on=on, **kw)  # type: ignore[arg-type]


class TestDueWaits:
    def test_nothing_fires_before_until_without_a_match(self) -> None:
        """A wait whose condition does not hold and whose until is ahead stays."""
        assert due_waits(NOW, [wait({"kind": "answer", "key": "q"})], Facts()) == []

    def test_until_passed_fires_timer(self) -> None:
        """until in the past: woken_by timer."""
        assert due_waits(NOW, [wait(until="2026-11-02T11:59:59.000Z")], Facts()) == [
            Due("t1", "timer")
        ]

    def test_until_wins_over_an_on_that_never_matches(self) -> None:
        """A source that never moves still times out."""
        on = {"kind": "source", "input": "prs", "fingerprint_not": "fp1"}
        facts = Facts(fingerprints={"prs": "fp1"})
        assert due_waits(NOW, [wait(on, until="2026-11-01T00:00:00.000Z")], facts) == [
            Due("t1", "timer")
        ]

    def test_a_moved_source_fires_source(self) -> None:
        """fingerprint differs from fingerprint_not: woken_by source."""
        on = {"kind": "source", "input": "prs", "fingerprint_not": "fp1"}
        assert due_waits(NOW, [wait(on)], Facts(fingerprints={"prs": "fp2"})) == [
            Due("t1", "source")
        ]

    def test_an_approval_fires_approval(self) -> None:
        """The approval key observed: woken_by approval."""
        on = {"kind": "approval", "key": "d1"}
        assert due_waits(NOW, [wait(on)], Facts(approvals=frozenset({"d1"}))) == [
            Due("t1", "approval")
        ]

    def test_an_answer_that_arrived_before_the_wait_is_not_lost(self) -> None:
        """The answer is a fact checked at decision time, whenever it arrived."""
        h = Harness.make(decision="wait", wait=Wait(on={"kind": "answer", "key": "q1"}))
        facts = Facts(answers=frozenset({"q1"}))
        h.start()
        pending = PendingWait.from_state(fold("t1", h.journal.events))
        assert pending is not None
        assert due_waits(h.clock(), [pending], facts) == [Due("t1", "answer")]

    def test_the_user_asking_fires_asked(self) -> None:
        """hz heinzel resume: woken_by asked, even before the condition holds."""
        assert due_waits(NOW, [wait()], Facts(asked=frozenset({"t1"}))) == [Due("t1", "asked")]

    def test_a_draft_placed_by_another_turn_supersedes(self) -> None:
        """Another turn's draft for the same output after the wait: superseded."""
        facts = Facts(drafts={"section": ("t2", 9)}, asked=frozenset({"t1"}))
        assert due_waits(NOW, [wait(output="section")], facts) == [Due("t1", "superseded")]

    def test_an_older_draft_does_not_supersede(self) -> None:
        """A draft placed before the wait (lower seq) or by the same turn does not count."""
        facts = Facts(drafts={"section": ("t2", 3)})
        assert due_waits(NOW, [wait(output="section")], facts) == []
        facts = Facts(drafts={"section": ("t1", 9)})
        assert due_waits(NOW, [wait(output="section")], facts) == []

    def test_a_wait_event_round_trips(self) -> None:
        """PendingWait.from_event reads turn.waiting's fields."""
        event = Event(
            seq=4,
            ts="2026-11-01T00:00:00.000Z",
            prev=None,
            turn="t9",
            kind="turn.waiting",
            key=None,
            data={
                "step": "act",
                "until": "2026-11-08T00:00:00.000Z",
                "on": {"kind": "answer", "key": "q"},
                "output": "o",
            },
        )
        assert PendingWait.from_event(event) == PendingWait(
            "t9", "act", "2026-11-08T00:00:00.000Z", 4, {"kind": "answer", "key": "q"}, "o"
        )


class TestWaitingTurns:
    def test_a_wait_without_until_gets_max_wait(self) -> None:
        """Seven days from now by default."""
        h = Harness.make(decision="wait")
        h.start()
        assert h.journal.events[-1].data["until"] == "2026-11-06T15:00:00.000Z"

    def test_a_woken_turn_records_woken_by_and_continues(self) -> None:
        """turn.resumed{woken_by: answer} and the turn goes on from outcome."""
        h = Harness.make(decision="wait")
        h.start()
        state = h.resume(woken_by="answer")
        resumed = next(e for e in h.journal.events if e.kind == "turn.resumed")
        assert dict(resumed.data) == {"woken_by": "answer", "step": "outcome"}
        assert (state.disposition, h.steps.calls["think"]) == ("drafted", 1)

    def test_superseding_ends_a_waiting_turn_abandoned(self) -> None:
        """supersede() writes turn.finished abandoned superseded."""
        h = Harness.make(decision="wait")
        h.start()
        state = supersede(h.journal, h.settings, turn="t1")
        assert (state.state, state.reason) == ("abandoned", "superseded")

    def test_superseding_a_turn_that_is_not_waiting_does_nothing(self) -> None:
        """A finished turn stays finished."""
        h = Harness.make()
        h.start()
        assert supersede(h.journal, h.settings, turn="t1").state == "finished"

    @pytest.mark.parametrize(
        "on",
        [{"kind": "moon"}, {"kind": "source", "input": "prs"}, {"kind": "answer"}],
    )
    def test_a_malformed_condition_is_refused(self, on: dict[str, str]) -> None:
        """Unknown kinds or missing fields are HZM030."""
        with pytest.raises(MachineError, match="HZM030"):
            check_wait(on)


class TestPinsAcrossAWait:
    def test_a_turn_woken_from_a_wait_runs_under_its_pins(self) -> None:
        """The contract version of turn.started, not the current one, after the wait."""
        h = Harness.make(decision="wait")
        h.start(pins=Pins(contract_version=3, lessons_seq=9))
        h.steps.pins_seen.clear()
        h.resume(woken_by="timer")
        assert {p["contract_version"] for p in h.steps.pins_seen} == {3}
        assert {p["lessons_seq"] for p in h.steps.pins_seen} == {9}
