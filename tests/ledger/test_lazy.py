"""Lazy lines and deferred body fsyncs: fewer fsyncs, the same order on disk."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ledger.bodies import Bodies
from ledger.errors import LedgerError
from ledger.event import Event
from ledger.spine import Spine, read_events, verify
from machines import SpineJournal

AT = datetime(2026, 10, 30, 15, tzinfo=UTC)


def _fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record the file behind every os.fsync from now on."""
    seen: list[str] = []
    real = os.fsync

    def counted(fd: int) -> None:
        seen.append(Path(os.readlink(f"/proc/self/fd/{fd}")).name)
        real(fd)

    monkeypatch.setattr(os, "fsync", counted)
    return seen


class TestLazyLines:
    """`Spine.defer`: held back, then written with the next line in one write and fsync."""

    def test_held_back_until_the_next_line_of_another_kind(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Two lazy lines are not in the file; the third line writes all three with one fsync."""
        seen: list[Event] = []
        spine = Spine.open(tmp_path, clock=lambda: AT, on_durable=[seen.append])
        spine.defer({"step.started"})
        fsyncs = _fsyncs(monkeypatch)
        first = spine.append("step.started", {"step": "gather"}, turn="t1")
        spine.append("step.started", {"step": "think"}, turn="t1")
        assert list(read_events(spine.path)) == [] and seen == [] and fsyncs == []
        assert [e.seq for e in spine.pending] == [1, 2]
        spine.append("model.request", {"n": 1}, turn="t1")
        assert fsyncs == ["session.jsonl"]
        assert [e.seq for e in read_events(spine.path)] == [1, 2, 3]
        assert [e.seq for e in seen] == [1, 2, 3] and seen[0] == first
        assert spine.pending == ()
        spine.close()
        assert verify(spine.path).ok

    def test_close_and_sync_write_what_is_held(self, tmp_path: Path) -> None:
        """`sync` writes the held lines; `close` writes what is left; the chain verifies."""
        spine = Spine.open(tmp_path, clock=lambda: AT)
        spine.defer({"step.tool"})
        spine.append("step.tool", {"id": "a"}, turn="t1")
        spine.sync()
        assert [e.seq for e in read_events(spine.path)] == [1]
        spine.append("step.tool", {"id": "b"}, turn="t1")
        spine.close()
        assert [e.data["id"] for e in read_events(tmp_path)] == ["a", "b"]
        assert verify(tmp_path).ok

    def test_a_failing_before_write_writes_nothing(self, tmp_path: Path) -> None:
        """The held lines are dropped with the failing one; the next append takes their seq."""
        spine = Spine.open(tmp_path, clock=lambda: AT)
        spine.append("turn.started", {}, turn="t1")
        spine.defer({"step.started"})
        fails = [False, True]  # popped from the end: the first flush fails, the next passes

        def flush() -> None:
            if fails.pop():
                raise LedgerError("HZL002", "disk full", "free space")

        spine.before_write(flush)
        spine.append("step.started", {"step": "gather"}, turn="t1")
        with pytest.raises(LedgerError):
            spine.append("model.request", {"n": 1}, turn="t1")
        assert spine.last is not None and spine.last.seq == 1
        assert spine.append("turn.finished", {}, turn="t1").seq == 2
        spine.close()
        assert [e.kind for e in read_events(tmp_path)] == ["turn.started", "turn.finished"]
        assert verify(tmp_path).ok

    def test_a_journal_answers_from_the_held_lines(self, tmp_path: Path) -> None:
        """turn_events, key_events and recorded_done see lines not yet written."""
        spine = Spine.open(tmp_path, clock=lambda: AT)
        spine.append("heinzel.created", {})
        spine.defer({"turn.started", "effect.done"})
        journal = SpineJournal.open(spine)
        journal.append("turn.started", {"cause": "schedule"}, turn="t1", key="k@1")
        journal.append("effect.done", {"hash": "h1"}, turn="t1", key="e1")
        assert [e.kind for e in journal.turn_events("t1")] == ["turn.started", "effect.done"]
        assert [e.kind for e in journal.key_events("k@1")] == ["turn.started"]
        assert journal.recorded_done("e1") == "h1"
        spine.close()


class TestDeferredBodies:
    """`Bodies(defer_fsync=True)`: one fsync per body, before the spine line naming it."""

    def test_one_fsync_before_the_line(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Three records cost no fsync; the line that names them syncs the body first, once."""
        spine = Spine.open(tmp_path, clock=lambda: AT)
        bodies = Bodies(tmp_path, defer_fsync=True)
        spine.before_write(bodies.sync)
        bodies.append("t1", {"n": 0})  # creates the file (its directory is fsynced)
        fsyncs = _fsyncs(monkeypatch)
        digests = [bodies.append("t1", {"n": n}) for n in (1, 2, 3)]
        assert fsyncs == []
        spine.append("model.request", {"hash": digests[-1]}, turn="t1")
        assert fsyncs == ["t1.jsonl", "session.jsonl"]
        spine.append("turn.finished", {}, turn="t1")
        assert fsyncs == ["t1.jsonl", "session.jsonl", "session.jsonl"]
        assert [r["n"] for r in bodies.read("t1") or []] == [0, 1, 2, 3]
        spine.close()
        bodies.close()

    def test_close_syncs_what_is_pending(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Closing a body with records not yet fsynced fsyncs them first."""
        bodies = Bodies(tmp_path, defer_fsync=True)
        bodies.append("t1", {"n": 0})
        fsyncs = _fsyncs(monkeypatch)
        bodies.append("t1", {"n": 1})
        bodies.close("t1")
        assert fsyncs == ["t1.jsonl"]
