"""A journal reopened with the index an earlier journal left reads only the spine's tail."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger.errors import LedgerError
from ledger.spine import Spine
from machines.core.loop import run_sync
from machines.core.resume import Pins, resume_turn, start_turn
from machines.core.runner import Settings
from machines.crashkit.testing import (
    FakeWorld,
    ManualClock,
    RecordingSleep,
    ScriptedSteps,
    SimulatedCrash,
)
from machines.keys import Wake
from machines.stores.journal import InMemoryBody
from machines.stores.spine_journal import SpineIndex, SpineJournal

WAKES = [Wake("asked", "hz-s@r1")]


def spoil_first_line(directory: Path) -> None:
    """Overwrite the spine's first line with garbage of its length: only a reader of
    that line can tell."""
    path = directory / "session.jsonl"
    data = path.read_bytes()
    path.write_bytes(b"x" * data.index(b"\n") + data[data.index(b"\n") :])


def first_turn(directory: Path, clock: ManualClock) -> SpineIndex:
    """Two lines of a turn with an effect done; the index its journal left."""
    with Spine.open(directory, clock=clock) as spine:
        journal = SpineJournal.open(spine)
        journal.append("turn.started", {"cause": "asked"}, turn="t1", key="hz-s@r1")
        journal.append("effect.started", {"effect": "place_draft"}, turn="t1", key="k@d")
        journal.append("effect.done", {"hash": "sha256:1"}, turn="t1", key="k@d")
        return journal.index


class TestHeldIndex:
    def test_a_spine_ending_in_the_held_index_last_line_is_not_read(self, tmp_path: Path) -> None:
        """With the spine unchanged since, the reopened journal reads no line: a spoiled
        first line goes unnoticed, and recorded_done answers from the held index."""
        clock = ManualClock()
        held = first_turn(tmp_path, clock)
        spoil_first_line(tmp_path)
        with Spine.open(tmp_path, clock=clock) as spine:
            journal = SpineJournal.open(spine, index=held)
            assert spine.last is not None
            assert journal.index.scanned_to == spine.last.offset
            assert journal.recorded_done("k@d") == "sha256:1"
            assert journal.turn_offset("t1") == 0
            with pytest.raises(LedgerError, match="HZL030"):  # what a reader of it sees
                SpineIndex.scan(spine.path)

    def test_only_the_lines_after_the_held_index_are_read(self, tmp_path: Path) -> None:
        """Lines another writer appended after the held index's last line are taken in:
        their keys, turn starts and effects done; the lines before are not read."""
        clock = ManualClock()
        held = first_turn(tmp_path, clock)
        with Spine.open(tmp_path, clock=clock) as spine:
            spine.append("turn.started", {"cause": "asked"}, turn="t2", key="hz-s@r2")
            spine.append("effect.done", {"hash": "sha256:2"}, turn="t2", key="k@e")
        spoil_first_line(tmp_path)
        with Spine.open(tmp_path, clock=clock) as spine:
            journal = SpineJournal.open(spine, index=held)
            assert journal.turn_offset("t1") == 0
            assert [e.kind for e in journal.key_events("hz-s@r2")] == ["turn.started"]
            assert journal.recorded_done("k@e") == "sha256:2"
            assert journal.recorded_done("k@d") == "sha256:1"

    def test_a_spine_not_holding_the_held_index_last_line_is_scanned(self, tmp_path: Path) -> None:
        """When the file no longer holds the held index's last line as it was, the
        journal's index is a new scan of the file."""
        clock = ManualClock()
        held = first_turn(tmp_path, clock)
        path = tmp_path / "session.jsonl"
        lines = path.read_bytes().splitlines(keepends=True)
        path.write_bytes(b"".join(lines[:2]))
        with Spine.open(tmp_path, clock=clock) as spine:
            spine.append("usage", {"kind": "summary", "tokens": 1})
            journal = SpineJournal.open(spine, index=held)
            assert journal.index == SpineIndex.scan(spine.path)
            assert journal.recorded_done("k@d") is None

    def test_a_turn_crashed_in_process_resumes_on_the_held_index(self, tmp_path: Path) -> None:
        """A crash after a durable line the held index never took in: the reopened
        journal takes that line in from the file and the draft is placed once."""
        clock, world, body = ManualClock(), FakeWorld(), InMemoryBody()
        steps = ScriptedSteps(world, owner="hz-s")
        settings = Settings(clock=clock, sleep=RecordingSleep())
        count = [0]

        def crash(_event: object) -> None:
            count[0] += 1
            if count[0] == 5:
                raise SimulatedCrash

        with Spine.open(tmp_path, clock=clock, on_durable=[crash]) as spine:
            journal = SpineJournal.open(spine)
            with pytest.raises(SimulatedCrash):
                run_sync(
                    start_turn(journal, body, steps, settings, turn="t1", wakes=WAKES, pins=Pins(1))
                )
            durable_seq = spine.last.seq if spine.last else 0
        held = journal.index
        assert held.last_seq < durable_seq
        with Spine.open(tmp_path, clock=clock) as spine:
            reopened = SpineJournal.open(spine, index=held)
            assert reopened.index == SpineIndex.scan(spine.path)
            state = run_sync(resume_turn(reopened, body, steps, settings, turn="t1"))
        assert (state.disposition, sum(world.performed.values())) == ("drafted", 1)

    def test_a_held_index_whose_last_line_is_not_a_line_there_is_scanned(
        self, tmp_path: Path
    ) -> None:
        """When the file was replaced and the held index's last offset falls inside a
        line, the journal scans the file instead of failing."""
        clock = ManualClock()
        held = first_turn(tmp_path, clock)
        (tmp_path / "session.jsonl").unlink()
        with Spine.open(tmp_path, clock=clock) as spine:
            spine.append("usage", {"kind": "summary", "note": "n" * 200})
            spine.append("usage", {"kind": "summary", "tokens": 2})
            spine.append("usage", {"kind": "summary", "tokens": 3})
        with Spine.open(tmp_path, clock=clock) as spine:
            journal = SpineJournal.open(spine, index=held)
            assert journal.index == SpineIndex.scan(spine.path)
            assert journal.turn_offset("t1") is None
