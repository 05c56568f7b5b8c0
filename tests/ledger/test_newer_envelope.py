"""A line a newer hz wrote under a later envelope ``v``: never misread, never appended to."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ledger.errors import LedgerError
from ledger.event import canonical
from ledger.reading import read_events
from ledger.spine import Spine
from ledger.verify import verify


def clock() -> datetime:
    return datetime(2026, 10, 30, 15, 0, tzinfo=UTC)


def newer_spine(directory: Path) -> Path:
    """One line of this ledger, then one chained line of envelope v2."""
    with Spine.open(directory, clock=clock) as spine:
        spine.append("test.tick", {"n": 1})
    path = directory / "session.jsonl"
    last = path.read_bytes()[:-1]
    line = {
        "v": 2,
        "seq": 2,
        "ts": "2026-10-30T15:00:01.000Z",
        "prev": hashlib.sha256(last).hexdigest(),
        "turn": None,
        "kind": "test.tick",
        "key": None,
        "data": {"n": 2},
    }
    with path.open("ab") as spine_file:
        spine_file.write(canonical(line).encode() + b"\n")
    return path


def test_a_writer_refuses_a_spine_ending_in_a_newer_envelope(tmp_path: Path) -> None:
    """HZL070 names both versions; the bytes stay as they were and the lock is free."""
    path = newer_spine(tmp_path)
    before = path.read_bytes()
    with pytest.raises(LedgerError) as raised:
        Spine.open(tmp_path, clock=clock)
    assert raised.value.code == "HZL070"
    assert "envelope v2; this hz reads v1" in raised.value.message
    assert "upgrade hz" in raised.value.hint
    assert path.read_bytes() == before
    assert not list(tmp_path.glob("session.jsonl.torn-*"))
    with pytest.raises(LedgerError, match="HZL070"):  # the lock was released
        Spine.open(tmp_path, clock=clock, lock_timeout=0)


def test_readers_name_the_newer_line_and_verify_says_who_wrote_it(tmp_path: Path) -> None:
    """read_events raises HZL070 (not HZL030, which a writer would contain), skips it with
    skip_damaged; verify names it as written by a newer hz."""
    path = newer_spine(tmp_path)
    with pytest.raises(LedgerError, match="HZL070"):
        list(read_events(path))
    assert [e.seq for e in read_events(path, skip_damaged=True)] == [1]
    (only,) = verify(path).breaks
    assert (only.seq, only.reason) == (2, "bad-envelope")
    assert "written by a newer hz" in only.detail
