"""Embedding machines safely: the mistakes of issue 14 are impossible or refused."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from dataclasses import FrozenInstanceError, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from ledger.bodies import Bodies
from ledger.event import make_event
from ledger.spine import Spine, read_events, verify
from machines import (
    HZ,
    Acted,
    DiskBody,
    Effect,
    InMemoryBody,
    InMemoryJournal,
    Pins,
    Session,
    Settings,
    SpineIndex,
    SpineJournal,
    Vocabulary,
    Wake,
    WorldProbe,
    fold,
    keys,
    new_turn_id,
    resume_turn,
    retry_fork,
    start_turn,
)
from machines.crashkit.testing import (
    FakeWorld,
    Harness,
    ManualClock,
    RecordingSleep,
    ScriptedSteps,
    SimulatedCrash,
)
from machines.errors import MachineError

KEY = "hz-s@r1"
WAKES = [Wake("asked", KEY)]


def finished_once(directory: Path, clock: ManualClock, world: FakeWorld) -> None:
    """A host that runs one turn to the end over a real spine."""
    steps = ScriptedSteps(world, owner="hz-s")
    settings = Settings(clock=clock, sleep=RecordingSleep())
    with Spine.open(directory, clock=clock) as spine:
        journal = SpineJournal.open(spine)
        asyncio.run(
            start_turn(
                journal, InMemoryBody(), steps, settings, turn="t1", wakes=WAKES, pins=Pins(1)
            )
        )
    assert sum(world.performed.values()) == 1


class TestTheIndexMustAgreeWithTheSpine:
    def test_a_journal_without_an_index_is_refused(self, tmp_path: Path) -> None:
        """SpineJournal(spine) with no index, the default that re-ran turns, is HZM063."""
        clock = ManualClock()
        finished_once(tmp_path, clock, FakeWorld())
        with Spine.open(tmp_path, clock=clock) as spine:
            with pytest.raises(TypeError):
                SpineJournal(spine)  # type: ignore[call-arg]
            with pytest.raises(MachineError, match="HZM063"):
                SpineJournal(spine, None)  # type: ignore[arg-type]
            with pytest.raises(MachineError, match="HZM063"):
                SpineJournal(spine, SpineIndex())

    def test_scanning_a_missing_spine_is_refused(self, tmp_path: Path) -> None:
        """SpineIndex.scan of a path with no spine is HZM064, not an empty index."""
        with pytest.raises(MachineError, match="HZM064"):
            SpineIndex.scan(tmp_path / "nowhere" / "session.jsonl")

    def test_an_index_behind_the_spine_is_refused(self, tmp_path: Path) -> None:
        """An index built before the last append no longer matches: HZM063."""
        clock = ManualClock()
        with Spine.open(tmp_path, clock=clock) as spine:
            spine.append("usage", {"tokens": 1})
            stale = SpineIndex.scan(spine.path)
            spine.append("usage", {"tokens": 2})
            with pytest.raises(MachineError, match="HZM063"):
                SpineJournal(spine, stale)

    def test_a_key_the_spine_records_done_is_not_performed_whatever_the_index_says(
        self, tmp_path: Path
    ) -> None:
        """An index that knows nothing of the key still cannot make the effect run twice."""
        clock, world = ManualClock(), FakeWorld()
        finished_once(tmp_path, clock, world)
        steps = ScriptedSteps(world, owner="hz-s")
        settings = Settings(clock=clock, sleep=RecordingSleep())
        with Spine.open(tmp_path, clock=clock) as spine:
            blind = SpineJournal.open(spine)
            blind.index.keyed.clear()  # an index that lost every key
            asyncio.run(
                start_turn(
                    blind, InMemoryBody(), steps, settings, turn="t2", wakes=WAKES, pins=Pins(1)
                )
            )
        assert sum(world.performed.values()) == 1

    def test_an_index_built_by_hand_that_lacks_the_key_still_cannot_rerun_it(
        self, tmp_path: Path
    ) -> None:
        """An index not scanned from the file (its lines added by the host, the done key
        left out) agrees with the tail, yet the byte search over the whole file finds
        the key done and the effect runs once."""
        clock, world = ManualClock(), FakeWorld()
        finished_once(tmp_path, clock, world)
        steps = ScriptedSteps(world, owner="hz-s")
        settings = Settings(clock=clock, sleep=RecordingSleep())
        with Spine.open(tmp_path, clock=clock) as spine:
            partial = SpineIndex()
            for event in read_events(spine.path):
                if event.kind != "effect.done":
                    partial.add(event)
                partial.last_seq, partial.last_hash = event.seq, event.hash
            journal = SpineJournal(spine, partial)
            assert partial.scanned_to == 0
            asyncio.run(
                start_turn(
                    journal, InMemoryBody(), steps, settings, turn="t2", wakes=WAKES, pins=Pins(1)
                )
            )
        assert sum(world.performed.values()) == 1

    @pytest.mark.parametrize("read_at_once", [1 << 20, 0], ids=["read", "mapped"])
    def test_a_done_line_appended_after_the_scan_is_found_in_the_file(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read_at_once: int
    ) -> None:
        """Lines after what the scan read are searched in the file: an ``effect.done``
        appended past the journal (straight to the spine) is seen; the scanned part is
        answered from what the scan read, not searched again. The same whether the bytes
        after the scan are read at once or the file is mapped (a large tail)."""
        monkeypatch.setattr("machines.stores.spine_journal._READ_AT_ONCE", read_at_once)
        clock = ManualClock()
        with Spine.open(tmp_path, clock=clock) as spine:
            spine.append("effect.done", {"hash": "h-old"}, turn="t0", key="k-old")
            spine.append("usage", {"tokens": 1})
            journal = SpineJournal.open(spine)
            assert journal.index.scanned_to > 0
            assert journal.recorded_done("k-old") == "h-old"
            assert journal.recorded_done("k-new") is None
            spine.append("effect.done", {"hash": "h-new"}, turn="t0", key="k-new")
            assert journal.recorded_done("k-new") == "h-new"
            spine.append("effect.done", {"hash": "h-again"}, turn="t0", key="k-old")
            assert journal.recorded_done("k-old") == "h-again"

    def test_every_reader_takes_the_directory_or_the_file(self, tmp_path: Path) -> None:
        """Spine.open, SpineIndex.scan and verify accept the directory and the file alike."""
        clock = ManualClock()
        with Spine.open(tmp_path / "session.jsonl", clock=clock) as spine:
            spine.append("usage", {"tokens": 1})
        assert SpineIndex.scan(tmp_path) == SpineIndex.scan(tmp_path / "session.jsonl")
        assert verify(tmp_path).ok and verify(tmp_path).last_seq == 1


class TestTurnIds:
    def test_a_turn_id_with_events_is_refused(self) -> None:
        """Starting a second turn under a used id is HZM017 and appends nothing."""
        h = Harness.make()
        h.start(turn="t1")
        before = len(h.journal.events)
        with pytest.raises(MachineError, match="HZM017"):
            h.start(turn="t1", wakes=[Wake("asked", "hz-test@other")])
        assert len(h.journal.events) == before

    def test_minted_turn_ids_differ_at_the_same_instant(self) -> None:
        """new_turn_id gives a fresh id from the injected clock, even at one instant."""
        clock = ManualClock()
        ids = {new_turn_id(clock) for _ in range(50)}
        assert len(ids) == 50 and all(i.startswith("turn-") for i in ids)


class TestWakeReportsAbandonedTurns:
    def test_wake_returns_the_abandoned_state_with_its_reason(self) -> None:
        """A wake whose turn the resume rules end abandoned returns that state."""
        h = Harness.make(max_resumes=0)
        h.crash_after = 4
        with pytest.raises(SimulatedCrash):
            h.start()
        session = Session(h.journal, h.body, h.steps, h.settings)
        wake = Wake("schedule", keys.schedule("hz-test", "2026-10-30T15:00"))
        ran = asyncio.run(session.wake([wake], turn="t9", pins=Pins(1)))
        assert [(s.state, s.reason) for s in ran] == [("abandoned", "max-resumes")]


class TestDiskBody:
    def test_a_put_is_on_disk_when_it_returns(self, tmp_path: Path) -> None:
        """A value put by a process killed right after put is read by the next one."""
        code = (
            "import os, sys\n"
            "from machines import DiskBody\n"
            "DiskBody(sys.argv[1]).put('t1', 'sha256:ab', {'v': 1})\n"
            "os._exit(137)\n"
        )
        done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=False)
        assert done.returncode == 137
        assert DiskBody(tmp_path).get("t1", "sha256:ab") == {"v": 1}

    def test_every_put_is_on_disk_with_the_handle_kept_open(self, tmp_path: Path) -> None:
        """Each of many puts to one turn survives a kill right after the last one returns."""
        code = (
            "import os, sys\n"
            "from machines import DiskBody\n"
            "body = DiskBody(sys.argv[1])\n"
            "for n in range(20):\n"
            "    body.put('t1', f'sha256:{n:02x}', {'v': n})\n"
            "os._exit(137)\n"
        )
        done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=False)
        assert done.returncode == 137
        body = DiskBody(tmp_path)
        assert [body.get("t1", f"sha256:{n:02x}") for n in range(20)] == [
            {"v": n} for n in range(20)
        ]

    def test_the_body_is_read_once_per_turn_not_per_put(self, tmp_path: Path) -> None:
        """A turn's puts read its body once (a resumed turn's values), then only append."""
        reads: list[str] = []

        class CountingBodies(Bodies):
            def read(self, turn: str) -> list[dict[str, Any]] | None:
                reads.append(turn)
                return super().read(turn)

        DiskBody(tmp_path).put("t1", "sha256:00", {"v": 0})
        body = DiskBody(CountingBodies(tmp_path))
        for n in range(10):
            body.put("t1", f"sha256:{n:02x}", {"v": n})
        body.close()
        assert reads == ["t1"]
        assert [r["value"] for r in body.records("t1")] == [{"v": n} for n in range(10)]

    def test_a_missing_value_is_a_key_error(self, tmp_path: Path) -> None:
        """A digest never put (or expired) is KeyError, as the Body protocol says."""
        with pytest.raises(KeyError):
            DiskBody(tmp_path).get("t1", "sha256:none")


DEPLOY = Vocabulary(
    "deploy", 1, dispositions=("deployed",), causes=("release",), renamed={"shipped": "deployed"}
)


class DeploySteps(ScriptedSteps):
    async def act(self, ctx: object, decided: object) -> Acted:  # type: ignore[override]
        return Acted("deployed")


class TestHostVocabulary:
    def run(self, settings: Settings) -> str:
        world = FakeWorld()
        journal = InMemoryJournal(settings.clock)
        state = asyncio.run(
            start_turn(
                journal,
                InMemoryBody(),
                DeploySteps(world),
                settings,
                turn="t1",
                wakes=[Wake("release", "bot@release:v1", DEPLOY)],
                pins=Pins(),
            )
        )
        return f"{state.state} {state.disposition} {state.error}"

    def test_a_host_reports_its_own_disposition(self) -> None:
        """Under its own vocabulary a deploy turn ends deployed, not HZM014."""
        clock = ManualClock()
        settings = Settings(clock=clock, sleep=RecordingSleep(), vocabulary=DEPLOY)
        assert self.run(settings) == "finished deployed None"

    def test_a_cause_outside_the_vocabulary_is_refused(self) -> None:
        """A release wake under hz's vocabulary is HZM004; hz's causes stay hz's."""
        with pytest.raises(MachineError, match="HZM004"):
            Wake("release", "bot@release:v1")
        with pytest.raises(MachineError, match="HZM004"):
            self.run(Settings(clock=ManualClock(), sleep=RecordingSleep()))

    def test_a_renamed_word_is_migrated_on_read(self) -> None:
        """A turn.finished written as shipped reads as deployed; the line is unchanged."""
        event = make_event(
            seq=2, ts="2026-10-30T15:00:00.000Z", prev=None, kind="turn.finished",
            turn="t1", data={"disposition": "shipped"},
        )  # fmt: skip
        start = make_event(
            seq=1, ts="2026-10-30T15:00:00.000Z", prev=None, kind="turn.started",
            turn="t1", data={"cause": "release"},
        )  # fmt: skip
        walked = [start]
        for step in ("think", "outcome", "act", "finish"):
            walked.append(replace(start, kind="step.started", data={"step": step}))
        state = fold("t1", [*walked, event], DEPLOY)
        assert state.disposition == "deployed" and event.data["disposition"] == "shipped"

    def test_a_vocabulary_is_frozen_and_checked(self) -> None:
        """A registration cannot change later, nor claim the machine's dispositions."""
        with pytest.raises(FrozenInstanceError):
            DEPLOY.causes = ("x",)  # type: ignore[misc]
        with pytest.raises(MachineError, match="HZM009"):
            Vocabulary("bad", 1, dispositions=("failed",), causes=("x",))
        assert HZ.dispositions == ("drafted", "asked", "learned", "proposed")

    def test_a_turn_resumes_only_under_its_own_vocabulary(self) -> None:
        """A deploy turn resumed with hz's settings is HZM009, nothing appended."""
        clock = ManualClock()
        journal = InMemoryJournal(clock)
        journal.append(
            "turn.started",
            {"cause": "release", "pins": {"vocabulary": 1, "vocabulary_name": "deploy"}},
            turn="t1",
        )
        settings = Settings(clock=clock, sleep=RecordingSleep())
        with pytest.raises(MachineError, match="HZM009"):
            asyncio.run(
                resume_turn(journal, InMemoryBody(), DeploySteps(FakeWorld()), settings, turn="t1")
            )
        assert len(journal.events) == 1


class TestSmallerFrictions:
    def test_event_data_that_is_not_json_is_refused_before_the_effect(self) -> None:
        """An effect whose event_data is not JSON fails HZM023 and the world is untouched."""
        h = Harness.make()
        performed: list[str] = []

        async def perform(key: str) -> dict[str, str]:
            performed.append(key)
            return {}

        async def probe(_key: str) -> str:
            return "absent"

        async def act(ctx: object, decided: object) -> Acted:
            bad = Effect("x", "hz-test@x", perform, WorldProbe(probe), "x.done", {"at": object()})  # type: ignore[arg-type]
            await ctx.effect(bad)  # type: ignore[attr-defined]
            return Acted("drafted")

        h.steps.act = act  # type: ignore[method-assign]
        state = h.start()
        assert (state.state, state.error, performed) == ("failed", "HZM023", [])

    def test_machines_is_silent_unless_the_host_configures_logging(self) -> None:
        """A failing step in a host that configured no logging writes nothing to stderr."""
        code = (
            "from machines.crashkit.testing import Harness\n"
            "h = Harness.make(decision='fail')\n"
            "async def boom(ctx, thought):\n"
            "    raise RuntimeError('boom')\n"
            "h.steps.outcome = boom\n"
            "print(h.start().state)\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=False
        )
        assert (done.stdout.strip(), done.stderr) == ("failed", "")

    def test_a_turn_past_its_resumes_is_retried_as_a_fork(self) -> None:
        """retry_fork starts a new turn for an abandoned one; the parent stays as it ended."""
        h = Harness.make(max_resumes=0)
        h.crash_after = 4
        with pytest.raises(SimulatedCrash):
            h.start()
        assert h.resume().reason == "max-resumes"
        wake = Wake("retry", "hz-test@retry:t1:req1")
        state = asyncio.run(
            retry_fork(
                h.journal,
                h.body,
                h.steps,
                h.settings,
                parent="t1",
                wake=wake,
                pins=Pins(1),
                turn="t2",
            )
        )
        assert (state.state, fold("t1", h.journal.turn_events("t1")).state) == (
            "finished",
            "abandoned",
        )
        assert h.journal.turn_events("t2")[0].data["parent"] == "t1"
        with pytest.raises(MachineError, match="HZM018"):
            h2 = Harness.make(decision="wait")
            h2.start()
            asyncio.run(
                retry_fork(
                    h2.journal, h2.body, h2.steps, h2.settings, parent="t1", wake=wake, pins=Pins(1)
                )
            )

    def test_a_timeout_setting_counts_running_time_only(self) -> None:
        """A one-minute timeout still resumes a turn that was down for an hour."""
        h = Harness.make()
        h.settings = replace(h.settings, timeout=timedelta(minutes=1))
        h.crash_after = 3
        with pytest.raises(SimulatedCrash):
            h.start()
        h.clock.advance(hours=1)
        assert h.resume().disposition == "drafted"
