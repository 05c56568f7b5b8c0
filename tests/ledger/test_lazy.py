"""Lazy lines and deferred body fsyncs: fewer fsyncs, the same order on disk."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
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

        def flush(_events: Sequence[Event]) -> None:
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
    """`Bodies(defer_fsync=True)`: records only written; `sync` fsyncs each body and,
    when a body was created since, the directory, once."""

    def test_one_fsync_when_synced(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Creating a body and writing records costs no fsync; sync fsyncs the body and
        its directory once each, and a second sync nothing."""
        spine = Spine.open(tmp_path, clock=lambda: AT)
        bodies = Bodies(tmp_path, defer_fsync=True)
        spine.before_write(
            lambda events: bodies.sync() if events[-1].kind == "turn.finished" else None
        )
        bodies.append("t0", {"n": 0})  # the first body of the session makes turns/
        bodies.sync()
        fsyncs = _fsyncs(monkeypatch)
        digests = [bodies.append("t1", {"n": n}) for n in (0, 1, 2, 3)]
        assert fsyncs == []
        spine.append("model.request", {"hash": digests[-1]}, turn="t1")
        assert fsyncs == ["session.jsonl"]
        spine.append("turn.finished", {}, turn="t1")
        # the body and its directory are fsynced at once, in either order, before the line
        assert fsyncs[::3] == ["session.jsonl", "session.jsonl"]
        assert sorted(fsyncs[1:3]) == ["t1.jsonl", "turns"]
        bodies.sync()
        assert len(fsyncs) == 4
        assert [r["n"] for r in bodies.read("t1") or []] == [0, 1, 2, 3]
        spine.close()
        bodies.close()

    def test_close_syncs_what_is_pending(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Closing a body with records not yet fsynced fsyncs them, and the directory that
        got its name, first."""
        bodies = Bodies(tmp_path, defer_fsync=True)
        bodies.append("t1", {"n": 0})
        fsyncs = _fsyncs(monkeypatch)
        bodies.append("t1", {"n": 1})
        bodies.close("t1")
        assert sorted(fsyncs) == ["t1.jsonl", "turns"]
        bodies.append("t1", {"n": 2})
        bodies.close("t1")
        assert fsyncs[2:] == ["t1.jsonl"]

    def test_the_directory_is_fsynced_beside_the_body(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The directory's fsync runs on the fsync worker while the body's runs: the body's
        fsync waits for the directory's to start (it never would one after the other),
        and both have ended when sync returns."""
        bodies = Bodies(tmp_path, defer_fsync=True)
        bodies.append("t1", {"n": 0})
        real = os.fsync
        started, ended = threading.Event(), []
        seen: dict[str, tuple[str, bool]] = {}

        def fsync(fd: int) -> None:
            name = Path(os.readlink(f"/proc/self/fd/{fd}")).name
            if name == "turns":
                started.set()
            overlapped = started.wait(timeout=10) if name == "t1.jsonl" else True
            seen[name] = (threading.current_thread().name, overlapped)
            real(fd)
            ended.append(name)

        monkeypatch.setattr(os, "fsync", fsync)
        bodies.sync()
        caller = threading.current_thread().name
        assert seen == {"t1.jsonl": (caller, True), "turns": ("hz-fsync", True)}
        assert sorted(ended) == ["t1.jsonl", "turns"]


class TestUnsyncedLines:
    """`Spine.unsynced`: written at once, fsynced with the next line."""

    def test_written_at_once_and_fsynced_by_the_next_line(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A reader sees the unsynced line before any fsync; the next line's fsync covers both."""
        seen: list[Event] = []
        spine = Spine.open(tmp_path, clock=lambda: AT, on_durable=[seen.append])
        spine.unsynced({"turn.started"})
        fsyncs = _fsyncs(monkeypatch)
        spine.append("turn.started", {"cause": "asked"}, turn="t1")
        assert fsyncs == []
        assert [e.kind for e in read_events(tmp_path)] == ["turn.started"]
        assert [e.kind for e in seen] == ["turn.started"]
        spine.append("model.request", {"n": 1}, turn="t1")
        assert fsyncs == ["session.jsonl"]
        spine.close()
        assert verify(tmp_path).ok

    def test_sync_and_close_fsync_an_unsynced_line(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """With nothing after it, sync fsyncs the written line once, and close adds nothing."""
        spine = Spine.open(tmp_path, clock=lambda: AT)
        spine.unsynced({"turn.started"})
        fsyncs = _fsyncs(monkeypatch)
        spine.append("turn.started", {}, turn="t1")
        spine.sync()
        spine.sync()
        spine.close()
        assert fsyncs == ["session.jsonl"]

    def test_close_fsyncs_what_is_unsynced(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A writer closed after an unsynced line fsyncs it before letting go."""
        spine = Spine.open(tmp_path, clock=lambda: AT)
        spine.unsynced({"turn.started"})
        fsyncs = _fsyncs(monkeypatch)
        spine.append("turn.started", {}, turn="t1")
        spine.close()
        assert fsyncs == ["session.jsonl"]

    def test_a_power_cut_takes_only_what_was_not_fsynced(self, tmp_path: Path) -> None:
        """simulate_power_cut leaves the fsynced lines; the spine reopens, verifies and goes on."""
        spine = Spine.open(tmp_path, clock=lambda: AT)
        spine.unsynced({"turn.started"})
        spine.append("heinzel.created", {})
        spine.append("turn.started", {}, turn="t1")
        spine.simulate_power_cut()
        spine._shut()  # the process is gone; nothing more is written
        reopened = Spine.open(tmp_path, clock=lambda: AT)
        assert [e.kind for e in read_events(tmp_path)] == ["heinzel.created"]
        assert reopened.append("turn.started", {}, turn="t2").seq == 2
        reopened.close()
        assert verify(tmp_path).ok
