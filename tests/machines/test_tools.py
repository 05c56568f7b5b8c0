"""Tool calls under the replay rules, one call at a time."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from machines.core.fold import fold
from machines.core.tools import INTERRUPTED, ToolDecl, ToolFailed, run_tool
from machines.crashkit.testing import HANDOFF, SEARCH, ManualClock
from machines.stores.journal import InMemoryBody, InMemoryJournal


class Calls:
    """A tool body that counts its runs and can fail."""

    def __init__(self, fail: bool = False) -> None:
        self.runs = 0
        self.fail = fail

    async def __call__(self) -> Any:
        self.runs += 1
        if self.fail:
            raise ValueError("no")
        return {"rows": 3}


def call(journal: InMemoryJournal, body: InMemoryBody, decl: ToolDecl, calls: Calls) -> Any:
    record = fold("t1", journal.turn_events("t1")).tools.get("c1")
    return asyncio.run(
        run_tool(decl, "c1", {"q": 1}, calls, journal=journal, body=body, turn="t1", record=record)
    )


def started(decl: ToolDecl) -> InMemoryJournal:
    journal = InMemoryJournal(ManualClock())
    journal.append("turn.started", {}, turn="t1")
    journal.append(
        "tool.called",
        {"call_id": "c1", "tool": decl.name, "args": "sha256:x", "replay_safe": decl.replay_safe},
        turn="t1",
    )
    return journal


class TestRunTool:
    def test_an_unsafe_call_is_journalled_before_and_after_with_hashes(self) -> None:
        """tool.called then tool.result ok; arguments and result are in the body."""
        journal, body, calls = InMemoryJournal(ManualClock()), InMemoryBody(), Calls()
        assert call(journal, body, HANDOFF, calls) == {"rows": 3}
        called, result = (dict(e.data) for e in journal.events)
        assert (called["tool"], called["replay_safe"], result["status"]) == ("handoff", False, "ok")
        assert body.get("t1", called["args"]) == {"q": 1}
        assert body.get("t1", result["hash"]) == {"rows": 3}

    def test_a_replay_safe_call_writes_one_line_after_it(self) -> None:
        """Only tool.result, naming the tool and replay_safe; the result is in the body, and
        the fold knows the call from that line alone."""
        journal, body, calls = InMemoryJournal(ManualClock()), InMemoryBody(), Calls()
        assert call(journal, body, SEARCH, calls) == {"rows": 3}
        (event,) = journal.events
        assert (event.kind, event.data["tool"], event.data["replay_safe"]) == (
            "tool.result",
            "search",
            True,
        )
        assert body.get("t1", event.data["hash"]) == {"rows": 3}
        record = fold("t1", journal.events).tools["c1"]
        assert (record.tool, record.replay_safe, record.status) == ("search", True, "ok")

    def test_a_recorded_result_is_answered_from_the_body(self) -> None:
        """Called twice: run once."""
        journal, body, calls = InMemoryJournal(ManualClock()), InMemoryBody(), Calls()
        call(journal, body, HANDOFF, calls)
        assert call(journal, body, HANDOFF, calls) == {"rows": 3} and calls.runs == 1

    def test_an_expired_result_reruns_a_safe_call_and_interrupts_an_unsafe_one(self) -> None:
        """With the body gone: search runs again, handoff gets INTERRUPTED."""
        for decl, expected, runs in [(SEARCH, {"rows": 3}, 2), (HANDOFF, INTERRUPTED, 1)]:
            journal, body, calls = InMemoryJournal(ManualClock()), InMemoryBody(), Calls()
            call(journal, body, decl, calls)
            body.forget("t1")
            assert (call(journal, body, decl, calls), calls.runs) == (expected, runs)

    def test_an_interrupted_unsafe_call_is_recorded_once_and_never_run(self) -> None:
        """tool.called without result: status interrupted, written once, zero runs."""
        journal, body, calls = started(HANDOFF), InMemoryBody(), Calls()
        assert call(journal, body, HANDOFF, calls) == INTERRUPTED
        assert call(journal, body, HANDOFF, calls) == INTERRUPTED
        statuses = [e.data["status"] for e in journal.events if e.kind == "tool.result"]
        assert (statuses, calls.runs) == (["interrupted"], 0)

    def test_a_call_recorded_unsafe_is_not_rerun_even_if_now_declared_safe(self) -> None:
        """Both the record and the declaration must say replay-safe."""
        journal, body, calls = started(HANDOFF), InMemoryBody(), Calls()
        now_safe = ToolDecl("handoff", replay_safe=True)
        assert call(journal, body, now_safe, calls) == INTERRUPTED and calls.runs == 0

    def test_a_failing_call_records_its_error_and_raises(self) -> None:
        """status error with the class name; the exception reaches the step."""
        journal, body = InMemoryJournal(ManualClock()), InMemoryBody()
        with pytest.raises(ValueError):
            call(journal, body, HANDOFF, Calls(fail=True))
        assert dict(journal.events[-1].data) == {
            "call_id": "c1",
            "hash": None,
            "status": "error",
            "error": "ValueError",
        }

    def test_a_failed_unsafe_call_replays_its_failure_not_the_call(self) -> None:
        """The second time, HZM022 and no run."""
        journal, body = InMemoryJournal(ManualClock()), InMemoryBody()
        with pytest.raises(ValueError):
            call(journal, body, HANDOFF, Calls(fail=True))
        calls = Calls()
        with pytest.raises(ToolFailed, match="HZM022"):
            call(journal, body, HANDOFF, calls)
        assert calls.runs == 0

    def test_a_failed_safe_call_runs_again_and_records_ok(self) -> None:
        """A replay-safe call that failed is simply tried again."""
        journal, body = InMemoryJournal(ManualClock()), InMemoryBody()
        with pytest.raises(ValueError):
            call(journal, body, SEARCH, Calls(fail=True))
        assert call(journal, body, SEARCH, Calls()) == {"rows": 3}
        assert fold("t1", journal.events).tools["c1"].status == "ok"
