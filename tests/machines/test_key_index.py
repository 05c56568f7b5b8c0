"""The key rule answers from the journal's index: no spine read per key.

A host that offers every job it knows at start (docs/embedding.md, the key-rule pattern)
asks the rule once per job. Over a `SpineJournal` the answer comes from its `SpineIndex`
(a key's ``turn.started`` and its turn's end), so once the journal is open the spine's
bytes are not read again: a spine whose every line was made unreadable after the open
still gets the right plan, where a rule that reads the turn's lines fails HZL030.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from ledger.errors import LedgerError
from ledger.spine import Spine, read_events
from machines.core.resume import Pins, start_turn
from machines.core.runner import Settings
from machines.crashkit.testing import FakeWorld, ManualClock, RecordingSleep, ScriptedSteps
from machines.errors import MachineError
from machines.keys import Wake, coalesce, key_action
from machines.stores.journal import InMemoryBody
from machines.stores.spine_journal import SpineIndex, SpineJournal


def _unreadable(path: Path) -> None:
    """Every line of the spine file overwritten in place with bytes that are no line."""
    data = path.read_bytes()
    garbage = bytes(b if b == ord("\n") else ord("x") for b in data)
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, garbage, 0)
    finally:
        os.close(fd)


def _jobs(directory: Path, clock: ManualClock, done: int, open_one: bool) -> None:
    """``done`` finished turns (keys ``bot@job-<n>``) and, with ``open_one``, a turn left
    running (its ``turn.started`` only)."""
    settings = Settings(clock=clock, sleep=RecordingSleep())
    with Spine.open(directory, clock=clock) as spine:
        journal = SpineJournal.open(spine)
        for n in range(done):
            steps = ScriptedSteps(FakeWorld(), owner="bot", model_calls=0)
            wake = Wake("asked", f"bot@job-{n}")
            asyncio.run(
                start_turn(
                    journal,
                    InMemoryBody(),
                    steps,
                    settings,
                    turn=f"t{n}",
                    wakes=[wake],
                    pins=Pins(1),
                )
            )
        if open_one:
            journal.append("turn.started", {"cause": "asked"}, turn="t-open", key="bot@job-open")


class TestKeyRuleFromTheIndex:
    def test_a_no_op_restart_reads_no_spine_line_per_key(self, tmp_path: Path) -> None:
        """After the open, the plan for every known job (and a new one) comes out right
        with every line of the spine unreadable: nothing was read to answer it."""
        clock = ManualClock()
        _jobs(tmp_path, clock, 5, open_one=True)
        wakes = [Wake("asked", f"bot@job-{n}") for n in range(5)]
        wakes += [Wake("asked", "bot@job-open"), Wake("asked", "bot@job-new")]
        with Spine.open(tmp_path, clock=clock) as spine:
            journal = SpineJournal.open(spine)
            _unreadable(spine.path)
            plan = coalesce(journal, wakes)
            assert [key_action(journal, w.key).action for w in wakes[:5]] == ["none"] * 5
        assert plan.resume == ("t-open",)
        assert [w.key for w in plan.start] == ["bot@job-new"]

    def test_the_index_records_each_turns_end(self, tmp_path: Path) -> None:
        """The index a scan builds knows each finished turn's end (the seq of its
        ``turn.finished``) as the one built while appending did, and no end for an open
        turn."""
        clock = ManualClock()
        _jobs(tmp_path, clock, 2, open_one=True)
        with Spine.open(tmp_path, clock=clock) as spine:
            scanned = SpineIndex.scan(spine.path)
            finished = [e for e in spine.events() if e.kind == "turn.finished"]
            journal = SpineJournal(spine, scanned)
            ended = [journal.turn_ended(t) for t in ("t0", "t1", "t-open")]
        assert scanned.turn_ends == {e.turn: e.seq for e in finished}
        assert ended == [True, True, False]

    def test_a_journal_whose_index_is_the_hosts_still_reads_the_turn(self, tmp_path: Path) -> None:
        """An `at_tail` index (the host's own index answers for earlier lines) does not
        know an earlier turn's end: the rule reads the turn's lines, as before."""
        clock = ManualClock()
        _jobs(tmp_path, clock, 1, open_one=False)
        with Spine.open(tmp_path, clock=clock) as spine:
            offsets = SpineIndex.scan(spine.path).turn_offsets
            started = [e for e in spine.events() if e.kind == "turn.started"]
            index = SpineIndex.at_tail(spine)
            index.turn_offsets.update(offsets)
            index.keyed["bot@job-0"] = started
            journal = SpineJournal(spine, index)
            assert journal.turn_ended("t0") is None
            assert key_action(journal, "bot@job-0").action == "none"
            _unreadable(spine.path)
            with pytest.raises(LedgerError, match="HZL030"):
                key_action(journal, "bot@job-0")


def _damage(path: Path, index: int, how: str = "whole") -> None:
    """The ``index``-th line of the spine made no JSON: all of it (``whole``), or one
    byte inside its data, its start and end as they were (``inside``)."""
    lines = path.read_bytes().splitlines(keepends=True)
    if how == "whole":
        lines[index] = b"#" * (len(lines[index]) - 1) + b"\n"
    else:
        at = lines[index].index(b'":', 10)
        lines[index] = lines[index][:at] + b'" ' + lines[index][at + 2 :]
    path.write_bytes(b"".join(lines))


@pytest.mark.parametrize("how", ["whole", "inside"])
class TestADamagedLineMidSpine:
    def test_the_host_starts_and_the_break_is_contained_once(
        self, tmp_path: Path, how: str
    ) -> None:
        """One line that is no JSON in the middle of the spine: the journal opens, the
        break is recorded once (``spine.break_contained``, not again at the next open),
        finished jobs stay done and a new job runs to its end."""
        clock = ManualClock()
        _jobs(tmp_path, clock, 3, open_one=False)
        _damage(tmp_path / "session.jsonl", 12, how)  # a line of the second job's turn
        settings = Settings(clock=clock, sleep=RecordingSleep())
        wakes = [Wake("asked", f"bot@job-{n}") for n in range(4)]
        for _ in range(2):
            with Spine.open(tmp_path, clock=clock) as spine:
                journal = SpineJournal.open(spine)
                plan = coalesce(journal, wakes)
                assert (plan.resume, [w.key for w in plan.start]) == ((), ["bot@job-3"])
        with Spine.open(tmp_path, clock=clock) as spine:
            journal = SpineJournal.open(spine)
            steps = ScriptedSteps(FakeWorld(), owner="bot", model_calls=0)
            state = asyncio.run(
                start_turn(
                    journal,
                    InMemoryBody(),
                    steps,
                    settings,
                    turn="t3",
                    wakes=wakes[3:],
                    pins=Pins(1),
                )
            )
            report = spine.verify()
        contained = [
            e for e in read_events(tmp_path, skip_damaged=True) if e.kind == "spine.break_contained"
        ]
        assert state.disposition == "drafted"
        assert [(b.reason, b.contained) for b in report.breaks] == [("invalid-json", True)]
        assert len(contained) == 1

    def test_an_open_turn_after_the_damaged_line_is_refused_with_a_code(
        self, tmp_path: Path, how: str
    ) -> None:
        """A turn that has not ended, with a damaged line after its start, is not resumed
        (HZM075: its record may miss that line); every other key still gets its answer."""
        clock = ManualClock()
        _jobs(tmp_path, clock, 1, open_one=True)
        with Spine.open(tmp_path, clock=clock) as spine:
            spine.append("usage", {"tokens": 1}, turn="t-open")
            spine.append("usage", {"tokens": 2}, turn="t-open")
        lines = (tmp_path / "session.jsonl").read_bytes().count(b"\n")
        _damage(tmp_path / "session.jsonl", lines - 2, how)
        with Spine.open(tmp_path, clock=clock) as spine:
            journal = SpineJournal.open(spine)
            plan = coalesce(journal, [Wake("asked", "bot@job-0"), Wake("asked", "bot@job-open")])
            assert plan.resume == ("t-open",)
            with pytest.raises(MachineError, match="HZM075"):
                journal.turn_events("t-open")
            assert journal.turn_events("t0")[-1].kind == "turn.finished"

    def test_a_host_index_reads_around_a_recorded_break_but_not_into_an_open_turn(
        self, tmp_path: Path, how: str
    ) -> None:
        """A host whose own index answers for earlier lines (`SpineIndex.at_tail`, as hz's):
        once the spine records the break (``spine.break_contained``), its readers leave the
        damaged line out, so an ended turn reads (it was HZL030); an open turn with the
        line after its start is still HZM075, never resumed from a record that may miss a
        line."""
        clock = ManualClock()
        _jobs(tmp_path, clock, 1, open_one=True)
        with Spine.open(tmp_path, clock=clock) as spine:
            spine.append("usage", {"tokens": 1}, turn="t-open")
            spine.append("usage", {"tokens": 2}, turn="t-open")
        offsets = SpineIndex.scan(tmp_path).turn_offsets
        lines = (tmp_path / "session.jsonl").read_bytes().count(b"\n")
        _damage(tmp_path / "session.jsonl", lines - 2, how)
        with Spine.open(tmp_path, clock=clock) as spine:
            index = SpineIndex.at_tail(spine)
            index.turn_offsets.update(offsets)
            journal = SpineJournal(spine, index)
            assert spine.verify().uncontained() == []  # recorded by the open (the end)
            assert journal.turn_events("t0")[-1].kind == "turn.finished"
            with pytest.raises(MachineError, match="HZM075"):
                journal.turn_events("t-open")

    def test_an_edited_line_that_still_parses_is_found_and_recorded(
        self, tmp_path: Path, how: str
    ) -> None:
        """A line edited in place (still a valid envelope, its hash no longer the next
        line's prev) is a break the open finds in the lines it reads and records."""
        clock = ManualClock()
        _jobs(tmp_path, clock, 2, open_one=False)
        path = tmp_path / "session.jsonl"
        lines = path.read_bytes().splitlines(keepends=True)
        assert b'"step":"think"' in lines[1]
        lines[1] = lines[1].replace(b'"step":"think"', b'"step":"thinl"')
        path.write_bytes(b"".join(lines))
        with Spine.open(tmp_path, clock=clock) as spine:
            journal = SpineJournal.open(spine)
            assert journal.index.broken and not journal.index.damaged
            report = spine.verify()
        assert report.breaks and all(b.contained for b in report.breaks)
        assert key_action(journal, "bot@job-1").action == "none"
