"""Golden spines replay to their recorded state; one that does not match is refused."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from machines.crashkit.golden import FrozenJournal, replay
from machines.errors import MachineError

SPINES = Path(__file__).resolve().parents[2] / "fixtures" / "spines"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class TestGolden:
    def test_a_drafted_turn_and_a_skip_replay_to_their_state(self) -> None:
        """drafted.jsonl: t1 drafted for 0.2 USD, t2 skipped nothing-moved, nothing appended."""
        states = replay(SPINES / "drafted.jsonl")
        t1, t2 = states["t1"], states["t2"]
        assert (t1.state, t1.disposition, t1.spend_usd) == ("finished", "drafted", 0.2)
        assert [r.status for r in t1.tools.values()] == ["ok", "ok"]
        assert [(e.outcome, e.event_seen) for e in t1.effects.values()] == [("done", True)]
        assert (t2.state, t2.reason) == ("skipped", "nothing-moved")

    def test_a_turn_that_waited_and_was_answered_replays(self) -> None:
        """waited.jsonl: waited on an answer, resumed by it, drafted under pin v2."""
        state = replay(SPINES / "waited.jsonl")["t1"]
        assert (state.state, state.woken_by, state.pins["contract_version"]) == (
            "finished",
            "answer",
            2,
        )

    def test_replaying_leaves_the_file_unchanged(self) -> None:
        """Replay reads; the golden file's bytes stay the same."""
        path = SPINES / "drafted.jsonl"
        before = digest(path)
        replay(path)
        assert digest(path) == before

    def test_a_spine_that_does_not_match_the_code_is_refused_with_its_remedy(self) -> None:
        """mismatch.jsonl jumps from think to act: HZM010 naming the seq and the remedy."""
        with pytest.raises(MachineError) as raised:
            replay(SPINES / "mismatch.jsonl")
        assert raised.value.code == "HZM010" and "seq 3" in raised.value.message
        assert "hz heinzel retry" in raised.value.hint

    def test_an_unsettled_turn_is_refused_rather_than_resumed(self, tmp_path: Path) -> None:
        """A golden cut before its end would need new lines: HZM062."""
        cut = tmp_path / "cut.jsonl"
        lines = (SPINES / "drafted.jsonl").read_bytes().splitlines(keepends=True)
        cut.write_bytes(b"".join(lines[:5]))
        with pytest.raises(MachineError, match="HZM062"):
            replay(cut)

    def test_a_golden_spine_with_a_broken_chain_is_refused(self, tmp_path: Path) -> None:
        """An edited line breaks the chain: HZM061."""
        copy = tmp_path / "edited.jsonl"
        shutil.copyfile(SPINES / "drafted.jsonl", copy)
        copy.write_bytes(copy.read_bytes().replace(b'"usd":0.1', b'"usd":0.0', 1))
        with pytest.raises(MachineError, match="HZM061"):
            replay(copy)

    def test_a_frozen_journal_answers_keys(self) -> None:
        """FrozenJournal finds a turn's events by any of its keys."""
        from ledger.spine import read_events

        journal = FrozenJournal(list(read_events(SPINES / "drafted.jsonl")))
        assert {e.turn for e in journal.key_events("hz-golden@2026-11-06T15:00")} == {"t2"}
