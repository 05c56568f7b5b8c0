"""The spine writer: append, chain, lock, containment of torn tails and breaks."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ledger.errors import LedgerError
from ledger.event import Event, canonical
from ledger.reading import Upgrades, read_events
from ledger.spine import BREAK_CONTAINED, TORN_TAIL, Spine
from ledger.verify import verify


def clock() -> datetime:
    return datetime(2026, 10, 30, 15, 0, tzinfo=UTC)


def write_events(directory: Path, count: int) -> list[Event]:
    with Spine.open(directory, clock=clock) as spine:
        return [spine.append("test.tick", {"n": n}) for n in range(count)]


class TestAppend:
    def test_lines_are_canonical_and_chained(self, tmp_path: Path) -> None:
        """Each line is the event's canonical bytes; prev is the last line's SHA-256."""
        events = write_events(tmp_path, 3)
        lines = (tmp_path / "session.jsonl").read_bytes().splitlines()
        assert [json.loads(line)["seq"] for line in lines] == [1, 2, 3]
        assert [canonical(json.loads(line)).encode() for line in lines] == lines
        assert [e.prev for e in events] == [None] + [
            hashlib.sha256(line).hexdigest() for line in lines[:-1]
        ]

    def test_event_records_its_offset_and_the_clock(self, tmp_path: Path) -> None:
        """offset is where the line starts; ts comes from the injected clock."""
        events = write_events(tmp_path, 2)
        assert (events[0].offset, events[1].offset) == (0, len(events[0].line()))
        assert events[0].ts == "2026-10-30T15:00:00.000Z"

    def test_on_durable_sees_the_line_already_on_disk(self, tmp_path: Path) -> None:
        """Callbacks run after the write and fsync, in order, with the event."""
        seen: list[tuple[str, int, bool]] = []

        def first(event: Event) -> None:
            on_disk = event.line() in (tmp_path / "session.jsonl").read_bytes()
            seen.append(("first", event.seq, on_disk))

        def second(event: Event) -> None:
            seen.append(("second", event.seq, True))

        with Spine.open(tmp_path, clock=clock, on_durable=[first, second]) as spine:
            spine.append("a.b")
        assert seen == [("first", 1, True), ("second", 1, True)]

    def test_reopening_continues_the_chain(self, tmp_path: Path) -> None:
        """A new writer appends seq n+1 chained to the last line; last is that line."""
        events = write_events(tmp_path, 2)
        with Spine.open(tmp_path, clock=clock) as spine:
            assert spine.last == events[-1]
            third = spine.append("a.b")
        assert (third.seq, third.prev, verify(spine.path).ok) == (3, events[-1].hash, True)

    @pytest.mark.parametrize("kind", ["", "Turn.Started", "a..b", "a b", "a.b\n"])
    def test_a_bad_kind_is_refused(self, tmp_path: Path, kind: str) -> None:
        """Kinds are dotted lowercase names (HZL024)."""
        with Spine.open(tmp_path, clock=clock) as spine, pytest.raises(LedgerError) as caught:
            spine.append(kind)
        assert caught.value.code == "HZL024"

    @pytest.mark.parametrize("value", ["", "a\nb", "x" * 201])
    def test_a_bad_turn_or_key_is_refused(self, tmp_path: Path, value: str) -> None:
        """turn and key are one-line short ids (HZL024)."""
        with Spine.open(tmp_path, clock=clock) as spine:
            for field in ("turn", "key"):
                with pytest.raises(LedgerError) as caught:
                    spine.append("a.b", **{field: value})  # type: ignore[arg-type]
                assert caught.value.code == "HZL024"

    def test_an_oversized_line_is_refused(self, tmp_path: Path) -> None:
        """A line over MAX_LINE bytes is HZL025 and nothing is written."""
        with Spine.open(tmp_path, clock=clock) as spine:
            with pytest.raises(LedgerError) as caught:
                spine.append("a.b", {"ids": ["i" * 150] * 500})
            assert spine.path.read_bytes() == b""
        assert caught.value.code == "HZL025"

    def test_a_closed_spine_refuses_appends(self, tmp_path: Path) -> None:
        """After close, append is HZL011; close is idempotent."""
        spine = Spine.open(tmp_path, clock=clock)
        spine.close()
        spine.close()
        with pytest.raises(LedgerError) as caught:
            spine.append("a.b")
        assert (caught.value.code, spine.closed) == ("HZL011", True)

    def test_a_failed_write_records_nothing_and_closes(self, tmp_path: Path) -> None:
        """A write the disk refuses (file size limit) is HZL012; the file is unchanged."""
        code = f"""
import resource, signal, sys
from datetime import UTC, datetime
from ledger.spine import Spine
from ledger.errors import LedgerError
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
spine = Spine.open({str(tmp_path)!r}, clock=lambda: datetime(2026, 1, 1, tzinfo=UTC))
spine.append("a.b")
size = spine.path.stat().st_size
resource.setrlimit(resource.RLIMIT_FSIZE, (size + 50, size + 50))
try:
    spine.append("a.b", {{"pad": "p" * 150}})
except LedgerError as error:
    print(error.code, spine.closed, spine.path.stat().st_size == size)
"""
        result = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        assert result.stdout.split() == ["HZL012", "True", "True"]
        assert verify(tmp_path / "session.jsonl").ok


@pytest.fixture
def lock_holder(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the spine's lock until its stdin closes."""
    code = (
        "import fcntl, os, sys\n"
        "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "print('held', flush=True)\n"
        "sys.stdin.read()\n"
    )
    tmp_path.chmod(0o700)
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path / "lock")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    yield holder
    assert holder.stdin is not None
    holder.stdin.close()
    holder.wait()
    holder.stdout.close()


class TestLock:
    def test_a_second_writer_gets_a_coded_error(
        self, tmp_path: Path, lock_holder: subprocess.Popen[str]
    ) -> None:
        """While another process holds the lock, open fails with HZL010."""
        with pytest.raises(LedgerError) as caught:
            Spine.open(tmp_path, clock=clock, lock_timeout=0)
        assert caught.value.code == "HZL010"
        assert "lock_timeout" in caught.value.hint

    def test_the_wait_is_bounded_by_lock_timeout(
        self, tmp_path: Path, lock_holder: subprocess.Popen[str]
    ) -> None:
        """The writer polls for lock_timeout seconds of injected sleep, then gives up."""
        slept: list[float] = []
        with pytest.raises(LedgerError):
            Spine.open(tmp_path, clock=clock, lock_timeout=0.2, sleep=slept.append)
        assert sum(slept) == pytest.approx(0.2)

    def test_the_lock_is_free_again_after_the_holder_ends(
        self, tmp_path: Path, lock_holder: subprocess.Popen[str]
    ) -> None:
        """Once the holder exits, a writer gets the lock."""
        assert lock_holder.stdin is not None
        lock_holder.stdin.close()
        lock_holder.wait()
        with Spine.open(tmp_path, clock=clock, lock_timeout=0) as spine:
            assert spine.append("a.b").seq == 1

    def test_two_writers_in_one_process_exclude_each_other(self, tmp_path: Path) -> None:
        """One writer per spine, even within a process; closing releases it."""
        first = Spine.open(tmp_path, clock=clock)
        with pytest.raises(LedgerError) as caught:
            Spine.open(tmp_path, clock=clock, lock_timeout=0)
        first.close()
        with Spine.open(tmp_path, clock=clock, lock_timeout=0) as second:
            second.append("a.b")
        assert caught.value.code == "HZL010"

    def test_hzl010_names_the_process_that_holds_the_lock(self, tmp_path: Path) -> None:
        """A spine held by another process's writer: HZL010 says its pid and command."""
        code = (
            "import sys\n"
            "from datetime import UTC, datetime\n"
            "from ledger.spine import Spine\n"
            "spine = Spine.open(sys.argv[1], clock=lambda: datetime.now(UTC))\n"
            "print('held', flush=True)\n"
            "sys.stdin.read()\n"
        )
        script = tmp_path / "holder.py"
        script.write_text(code, encoding="utf-8")
        holder = subprocess.Popen(
            [sys.executable, str(script), str(tmp_path), "--worker-mark"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(LedgerError) as caught:
            Spine.open(tmp_path, clock=clock, lock_timeout=0)
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait()
        holder.stdout.close()
        assert caught.value.code == "HZL010"
        assert f"process {holder.pid} (" in caught.value.message
        assert "--worker-mark" in caught.value.message

    def test_a_symlinked_lock_is_refused(self, tmp_path: Path) -> None:
        """The lock file is hz's own: a link there is HZL001, never followed."""
        (tmp_path / "elsewhere").write_bytes(b"")
        (tmp_path / "lock").symlink_to(tmp_path / "elsewhere")
        with pytest.raises(LedgerError) as caught:
            Spine.open(tmp_path, clock=clock, lock_timeout=0)
        assert caught.value.code == "HZL001"

    def test_a_symlinked_spine_is_refused_and_the_lock_released(self, tmp_path: Path) -> None:
        """A link at session.jsonl is HZL001; the failed open leaves the lock free."""
        (tmp_path / "elsewhere").write_bytes(b"")
        (tmp_path / "session.jsonl").symlink_to(tmp_path / "elsewhere")
        with pytest.raises(LedgerError) as caught:
            Spine.open(tmp_path, clock=clock, lock_timeout=0)
        assert caught.value.code == "HZL001"
        (tmp_path / "session.jsonl").unlink()
        Spine.open(tmp_path, clock=clock, lock_timeout=0).close()


class TestTornTail:
    @pytest.mark.usefixtures("hostile_umask")
    def test_every_file_of_a_session_is_private(self, tmp_path: Path) -> None:
        """Under umask 000: directories 0700; spine, lock and side file 0600."""
        directory = tmp_path / "home" / "hz-01"
        write_events(directory, 1)
        with (directory / "session.jsonl").open("ab") as handle:
            handle.write(b"{")
        Spine.open(directory, clock=clock).close()
        modes = {
            p.name: stat.S_IMODE(os.lstat(p).st_mode)
            for p in (tmp_path / "home", directory, *directory.iterdir())
        }
        assert modes == {
            "home": 0o700,
            "hz-01": 0o700,
            "session.jsonl": 0o600,
            "lock": 0o600,
            "session.jsonl.torn-1": 0o600,
        }

    def test_a_torn_tail_moves_aside_and_is_recorded(self, tmp_path: Path) -> None:
        """The partial bytes go to a side file, spine.torn_tail names them, appends go on."""
        events = write_events(tmp_path, 2)
        torn = b'{"data":{"n":2},"key":nu'
        with (tmp_path / "session.jsonl").open("ab") as handle:
            handle.write(torn)
        with Spine.open(tmp_path, clock=clock) as spine:
            recorded = spine.last
            after = spine.append("a.b")
        assert recorded is not None and recorded.kind == TORN_TAIL
        assert dict(recorded.data) == {
            "size": len(torn),
            "sha256": hashlib.sha256(torn).hexdigest(),
            "side_file": "session.jsonl.torn-1",
            "offset": sum(len(e.line()) for e in events),
        }
        assert (tmp_path / "session.jsonl.torn-1").read_bytes() == torn
        assert (recorded.seq, recorded.prev, after.seq) == (3, events[-1].hash, 4)
        assert verify(tmp_path / "session.jsonl").ok

    def test_each_torn_tail_gets_its_own_side_file(self, tmp_path: Path) -> None:
        """A second torn tail never overwrites the first one's bytes."""
        for torn in (b"first", b"second"):
            write_events(tmp_path, 1)
            with (tmp_path / "session.jsonl").open("ab") as handle:
                handle.write(torn)
            Spine.open(tmp_path, clock=clock).close()
        assert (tmp_path / "session.jsonl.torn-1").read_bytes() == b"first"
        assert (tmp_path / "session.jsonl.torn-2").read_bytes() == b"second"

    def test_a_spine_that_is_only_a_torn_line_restarts_at_seq_1(self, tmp_path: Path) -> None:
        """A crash during the very first append leaves a spine whose first line is the record."""
        (tmp_path / "session.jsonl").write_bytes(b'{"dat')
        with Spine.open(tmp_path, clock=clock) as spine:
            assert spine.last is not None
            assert (spine.last.seq, spine.last.prev) == (1, None)
        assert verify(tmp_path / "session.jsonl").ok


class TestLongLines:
    def test_lines_longer_than_the_tail_block_reopen_and_contain_a_torn_tail(
        self, tmp_path: Path
    ) -> None:
        """Last lines of about 12 KB (more than the block an open reads at once) are
        found and chained on reopen, and a torn tail after them is still moved aside."""
        with Spine.open(tmp_path, clock=clock) as spine:
            wide = [
                spine.append("test.wide", {f"k{j}": j * 1000 + i for j in range(900)})
                for i in range(3)
            ]
        assert len(wide[-1].line()) > 8192
        with (tmp_path / "session.jsonl").open("ab") as handle:
            handle.write(b'{"torn')
        with Spine.open(tmp_path, clock=clock) as spine:
            assert spine.last is not None
            assert (spine.last.kind, spine.last.seq, spine.last.prev) == (
                TORN_TAIL,
                4,
                wide[-1].hash,
            )
        assert verify(tmp_path / "session.jsonl").ok


def damage(path: Path, line_index: int, old: bytes, new: bytes) -> None:
    lines = path.read_bytes().split(b"\n")
    assert old in lines[line_index]
    lines[line_index] = lines[line_index].replace(old, new, 1)
    path.write_bytes(b"\n".join(lines))


class TestBreaks:
    def test_a_break_in_the_middle_is_contained_and_stays_visible(self, tmp_path: Path) -> None:
        """Appends continue; verify names the seq; the recorded break stays in every report."""
        write_events(tmp_path, 5)
        path = tmp_path / "session.jsonl"
        damage(path, 2, b'"n":2', b'"n":9')
        with Spine.open(tmp_path, clock=clock) as spine:
            after = spine.append("a.b")
            report = spine.verify()
        later = verify(path)
        assert after.seq == 6
        assert [(b.seq, b.reason, b.contained) for b in report.breaks] == [
            (3, "prev-mismatch", True)
        ]
        assert [(b.seq, b.reason, b.contained) for b in later.breaks] == [
            (3, "prev-mismatch", True)
        ]
        assert not later.ok
        assert [e.data["seq"] for e in read_events(path, kinds={BREAK_CONTAINED})] == [3]

    def test_verify_records_a_break_once(self, tmp_path: Path) -> None:
        """A second Spine.verify finds the break already recorded and adds nothing."""
        write_events(tmp_path, 3)
        damage(tmp_path / "session.jsonl", 0, b'"n":0', b'"n":7')
        with Spine.open(tmp_path, clock=clock) as spine:
            spine.verify()
            size = spine.path.stat().st_size
            spine.verify()
            assert spine.path.stat().st_size == size

    def test_a_damaged_last_line_is_contained_on_open(self, tmp_path: Path) -> None:
        """The writer chains to the last line as written and records the break."""
        write_events(tmp_path, 3)
        path = tmp_path / "session.jsonl"
        damage(path, 2, b'"seq":3', b'"seq":"3"')
        damaged_line = path.read_bytes().split(b"\n")[2]
        with Spine.open(tmp_path, clock=clock) as spine:
            recorded = spine.last
            after = spine.append("a.b")
        assert recorded is not None and recorded.kind == BREAK_CONTAINED
        assert dict(recorded.data)["seq"] == 3
        assert recorded.prev == hashlib.sha256(damaged_line).hexdigest()
        assert (recorded.seq, after.seq) == (4, 5)
        report = verify(path)
        assert [(b.seq, b.reason, b.contained) for b in report.breaks] == [
            (3, "bad-envelope", True)
        ]


class TestUpgrades:
    def test_old_kinds_are_migrated_on_read_and_the_file_is_unchanged(self, tmp_path: Path) -> None:
        """a -> a.2 -> a.3 is followed; a reader that knows a.3 only sees all three."""
        with Spine.open(tmp_path, clock=clock) as spine:
            spine.append("draft.placed", {"n": 1})
            spine.append("draft.placed.2", {"count": 2})
            spine.append("draft.placed.3", {"total": 3})
            spine.append("other.kind")
        before = spine.path.read_bytes()
        upgrades = Upgrades()
        upgrades.register("draft.placed", "draft.placed.2", lambda d: {"count": d["n"]})
        upgrades.register("draft.placed.2", "draft.placed.3", lambda d: {"total": d["count"]})
        events = list(read_events(spine.path, kinds={"draft.placed.3"}, upgrades=upgrades))
        assert [(e.seq, e.kind, dict(e.data)) for e in events] == [
            (1, "draft.placed.3", {"total": 1}),
            (2, "draft.placed.3", {"total": 2}),
            (3, "draft.placed.3", {"total": 3}),
        ]
        assert events[0].hash == hashlib.sha256(before.split(b"\n")[0]).hexdigest()
        assert spine.path.read_bytes() == before

    def test_the_writer_sees_its_last_event_upgraded(self, tmp_path: Path) -> None:
        """Spine.last and Spine.events use the writer's registry."""
        with Spine.open(tmp_path, clock=clock) as spine:
            spine.append("old.kind", {"n": 1})
        upgrades = Upgrades()
        upgrades.register("old.kind", "new.kind", lambda d: {"m": d["n"]})
        with Spine.open(tmp_path, clock=clock, upgrades=upgrades) as spine:
            assert spine.last is not None
            assert (spine.last.kind, dict(spine.last.data)) == ("new.kind", {"m": 1})
            assert [e.kind for e in spine.events()] == ["new.kind"]

    @pytest.mark.parametrize(
        "steps",
        [
            [("a", "b"), ("a", "c")],
            [("a", "b"), ("b", "a")],
            [("a", "a")],
            [("A", "b")],
        ],
    )
    def test_conflicts_and_loops_are_refused(self, steps: list[tuple[str, str]]) -> None:
        """One successor per kind, no cycles, kind names only (HZL032)."""
        upgrades = Upgrades()
        with pytest.raises(LedgerError) as caught:
            for old, new in steps:
                upgrades.register(old, new, dict)
        assert caught.value.code == "HZL032"
