"""Reading a spine: in order, from a seq or an offset, known kinds only."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from ledger.errors import LedgerError
from ledger.event import Event
from ledger.reading import read_events
from ledger.spine import Spine


def clock() -> datetime:
    return datetime(2026, 10, 30, 15, 0, tzinfo=UTC)


@pytest.fixture
def written(tmp_path: Path) -> list[Event]:
    with Spine.open(tmp_path, clock=clock) as spine:
        return [
            spine.append("turn.started" if n % 3 == 0 else "step.done", {"n": n}, turn=f"t{n // 3}")
            for n in range(9)
        ]


class TestReadEvents:
    def test_reads_what_was_appended(self, tmp_path: Path, written: list[Event]) -> None:
        """Events read equal the events appended, with their hashes and offsets."""
        events = list(read_events(tmp_path / "session.jsonl"))
        assert events == written
        assert [(e.hash, e.offset) for e in events] == [(e.hash, e.offset) for e in written]

    def test_tails_from_a_seq(self, tmp_path: Path, written: list[Event]) -> None:
        """from_seq skips what comes before."""
        assert [e.seq for e in read_events(tmp_path / "session.jsonl", from_seq=7)] == [7, 8, 9]

    def test_reads_from_a_remembered_offset(self, tmp_path: Path, written: list[Event]) -> None:
        """A turn's first offset lets a reader start there without reading the rest."""
        start = written[6].offset
        events = list(read_events(tmp_path / "session.jsonl", from_offset=start))
        assert [e.seq for e in events] == [7, 8, 9]

    def test_skips_kinds_it_does_not_know(self, tmp_path: Path, written: list[Event]) -> None:
        """kinds keeps only the named kinds."""
        events = read_events(tmp_path / "session.jsonl", kinds={"turn.started"})
        assert [e.seq for e in events] == [1, 4, 7]

    def test_an_offset_inside_a_line_is_refused(self, tmp_path: Path, written: list[Event]) -> None:
        """HZL031: an offset that is not a line start, or past the end."""
        path = tmp_path / "session.jsonl"
        for offset in (5, path.stat().st_size + 1):
            with pytest.raises(LedgerError) as caught:
                list(read_events(path, from_offset=offset))
            assert caught.value.code == "HZL031"

    def test_a_torn_tail_is_not_read(self, tmp_path: Path, written: list[Event]) -> None:
        """A last line without its newline is not an event yet."""
        path = tmp_path / "session.jsonl"
        with path.open("ab") as handle:
            handle.write(b'{"data":{}')
        assert [e.seq for e in read_events(path)][-1] == 9

    def test_a_damaged_line_is_an_error_unless_skipped(
        self, tmp_path: Path, written: list[Event]
    ) -> None:
        """HZL030 names the byte; skip_damaged reads around it."""
        path = tmp_path / "session.jsonl"
        lines = path.read_bytes().split(b"\n")
        lines[1] = b"not json"
        path.write_bytes(b"\n".join(lines))
        with pytest.raises(LedgerError) as caught:
            list(read_events(path))
        assert caught.value.code == "HZL030"
        assert [e.seq for e in read_events(path, skip_damaged=True)] == [1, 3, 4, 5, 6, 7, 8, 9]

    def test_a_missing_spine_reads_as_empty(self, tmp_path: Path) -> None:
        """No file yet means no events."""
        assert list(read_events(tmp_path / "none.jsonl")) == []
