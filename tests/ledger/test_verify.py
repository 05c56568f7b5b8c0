"""verify: every break named by the seq of the first damaged line; open recovers."""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.event import Event, make_event
from ledger.reading import read_events
from ledger.spine import TORN_TAIL, Spine
from ledger.verify import check_line, verify

TS = "2026-10-30T15:00:00.000Z"


def clock() -> datetime:
    return datetime(2026, 10, 30, 15, 0, tzinfo=UTC)


def chain(payloads: list[tuple[str, dict[str, Any]]]) -> list[Event]:
    events: list[Event] = []
    offset = 0
    for seq, (kind, data) in enumerate(payloads, start=1):
        event = make_event(
            seq=seq,
            ts=TS,
            prev=events[-1].hash if events else None,
            kind=kind,
            data=data,
            offset=offset,
        )
        offset += len(event.line())
        events.append(event)
    return events


def spine_bytes(count: int) -> bytes:
    return b"".join(e.line() for e in chain([("test.tick", {"n": n}) for n in range(count)]))


def breaks_of(tmp_path: Path, content: bytes) -> list[tuple[int, str]]:
    path = tmp_path / "session.jsonl"
    path.write_bytes(content)
    return [(b.seq, b.reason) for b in verify(path).breaks]


def replace_line(content: bytes, index: int, line: bytes) -> bytes:
    lines = content.split(b"\n")
    lines[index] = line
    return b"\n".join(lines)


class TestReasons:
    def test_an_intact_spine_is_ok(self, tmp_path: Path) -> None:
        """The report counts lines and names the last seq and hash."""
        path = tmp_path / "session.jsonl"
        events = chain([("a.b", {"n": n}) for n in range(4)])
        path.write_bytes(b"".join(e.line() for e in events))
        report = verify(path)
        assert (report.ok, report.count, report.last_seq, report.last_hash) == (
            True,
            4,
            4,
            events[-1].hash,
        )

    def test_invalid_json(self, tmp_path: Path) -> None:
        """A line that does not parse is invalid-json at its place."""
        assert breaks_of(tmp_path, replace_line(spine_bytes(4), 1, b"{oops")) == [
            (2, "invalid-json")
        ]

    def test_bad_envelope(self, tmp_path: Path) -> None:
        """A JSON object without the fixed keys is bad-envelope."""
        assert breaks_of(tmp_path, replace_line(spine_bytes(3), 1, b'{"seq":2}')) == [
            (2, "bad-envelope")
        ]

    def test_non_canonical(self, tmp_path: Path) -> None:
        """Spaces or key order that canonical JSON would not produce."""
        content = spine_bytes(3)
        line = content.split(b"\n")[1].replace(b'"kind":', b'"kind": ')
        assert breaks_of(tmp_path, replace_line(content, 1, line)) == [(2, "non-canonical")]

    def test_a_deleted_line_is_a_seq_gap(self, tmp_path: Path) -> None:
        """Removing a line in the middle names the missing seq once."""
        lines = spine_bytes(5).split(b"\n")
        del lines[2]
        assert breaks_of(tmp_path, b"\n".join(lines)) == [(3, "seq-gap")]

    def test_an_edited_prev_is_a_prev_mismatch_of_that_line(self, tmp_path: Path) -> None:
        """A changed digit in prev is blamed on the line that holds it."""
        content = spine_bytes(4)
        line = content.split(b"\n")[2]
        digit = line.index(b'"prev":"') + 8
        edited = (
            line[:digit] + (b"0" if line[digit : digit + 1] != b"0" else b"1") + line[digit + 1 :]
        )
        assert breaks_of(tmp_path, replace_line(content, 2, edited)) == [(3, "prev-mismatch")]

    def test_an_edited_line_is_found_through_the_next_link(self, tmp_path: Path) -> None:
        """A line whose data changed is named, not the line after it."""
        content = spine_bytes(4).replace(b'"n":1', b'"n":5')
        assert breaks_of(tmp_path, content) == [(2, "prev-mismatch")]

    def test_torn_tail(self, tmp_path: Path) -> None:
        """Bytes after the last newline are a torn tail at the next seq."""
        assert breaks_of(tmp_path, spine_bytes(2) + b'{"da') == [(3, "torn-tail")]


payloads = st.lists(
    st.tuples(
        st.sampled_from(["turn.started", "effect.done", "a.b.2"]),
        st.dictionaries(
            st.sampled_from(["n", "name", "ids", "ü"]),
            st.one_of(
                st.integers(-(10**12), 10**12),
                st.text(max_size=12),
                st.booleans(),
                st.none(),
                st.lists(st.integers(0, 99), max_size=3),
            ),
            max_size=3,
        ),
    ),
    min_size=1,
    max_size=8,
)
FAST = settings(derandomize=True, deadline=None, max_examples=150)


class TestProperties:
    @FAST
    @given(payloads=payloads)
    def test_any_appends_verify(self, payloads: list[tuple[str, dict[str, Any]]]) -> None:
        """Whatever was appended reads back equal and verifies."""
        with tempfile.TemporaryDirectory() as name:
            with Spine.open(Path(name), clock=clock) as spine:
                appended = [spine.append(kind, data) for kind, data in payloads]
            report = verify(spine.path)
            assert (report.ok, report.count) == (True, len(payloads))
            assert list(read_events(spine.path)) == appended

    @FAST
    @given(payloads=payloads, cut=st.integers(0, 10**6))
    def test_a_truncation_is_a_torn_tail_and_open_recovers(
        self, payloads: list[tuple[str, dict[str, Any]]], cut: int
    ) -> None:
        """Cut at any byte: a torn tail at the next seq, or an intact shorter chain."""
        events = chain(payloads)
        content = b"".join(e.line() for e in events)
        cut %= len(content) + 1
        kept = content[:cut].count(b"\n")
        torn = content[sum(len(e.line()) for e in events[:kept]) : cut]
        with tempfile.TemporaryDirectory() as name:
            path = Path(name) / "session.jsonl"
            path.write_bytes(content[:cut])
            report = verify(path)
            if torn:
                assert [(b.seq, b.reason) for b in report.breaks] == [(kept + 1, "torn-tail")]
            else:
                assert (report.ok, report.count) == (True, kept)
            with Spine.open(Path(name), clock=clock) as spine:
                spine.append("test.after")
            after = list(read_events(path))
            assert after[:kept] == events[:kept]
            assert [e.kind for e in after[kept:]] == [TORN_TAIL] * bool(torn) + ["test.after"]
            if torn:
                assert (Path(name) / "session.jsonl.torn-1").read_bytes() == torn
            assert verify(path).ok

    @FAST
    @given(payloads=payloads, where=st.integers(0, 10**6), bit=st.integers(0, 7))
    def test_a_flipped_bit_is_named_by_its_seq_and_open_recovers(
        self, payloads: list[tuple[str, dict[str, Any]]], where: int, bit: int
    ) -> None:
        """verify names exactly the damaged seq; a writer then appends and contains it."""
        content = bytearray(b"".join(e.line() for e in chain(payloads)))
        where %= len(content)
        seq = content[:where].count(b"\n") + 1
        content[where] ^= 1 << bit
        with tempfile.TemporaryDirectory() as name:
            path = Path(name) / "session.jsonl"
            path.write_bytes(bytes(content))
            report = verify(path)
            if report.ok:
                # Only the last line can change undetected: nothing chains to it yet.
                assert seq == len(payloads)
            else:
                assert report.breaks[0].seq == seq
            with Spine.open(Path(name), clock=clock) as spine:
                new = spine.append("test.after")
                spine.verify()
            after = verify(path)
            assert after.uncontained() == []
            assert all(b.seq < new.seq for b in after.breaks)
            # a last complete line that is no longer JSON at all is moved aside like a torn
            # tail (a flipped newline can merge the last two lines into one such line)
            damaged = bytes(content)
            garbage_tail = damaged.endswith(b"\n") and (
                check_line(damaged.split(b"\n")[-2])[1] == "invalid-json"
            )
            if garbage_tail:
                assert [e.kind for e in read_events(path)][-2:] == [TORN_TAIL, "test.after"]
            elif report.breaks and report.breaks[0].reason != "torn-tail":
                assert after.breaks[0].seq == seq
