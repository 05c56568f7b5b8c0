"""The spine-backed journal: a turn read from its own start, keys from the index."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import pytest

from ledger.event import make_event
from ledger.spine import Spine
from machines.core.fold import fold
from machines.core.resume import Pins, resume_turn, start_turn
from machines.core.runner import Settings
from machines.core.steps import Acted
from machines.crashkit.testing import (
    FakeWorld,
    ManualClock,
    RecordingSleep,
    ScriptedSteps,
    SimulatedCrash,
)
from machines.errors import MachineError
from machines.keys import Wake, key_action
from machines.stores.journal import InMemoryBody
from machines.stores.spine_journal import SpineIndex, SpineJournal
from machines.stores.upgrades import upgrades
from machines.vocabulary import KINDS

WAKES = [Wake("asked", "hz-s@r1")]


def filled(directory: Path, clock: ManualClock, n: int) -> None:
    with Spine.open(directory, clock=clock) as spine:
        for i in range(n):
            spine.append("usage", {"kind": "summary", "tokens": i})


class TestSpineJournal:
    def test_a_turn_runs_and_resumes_on_a_real_spine(self, tmp_path: Path) -> None:
        """A crash after act's checkpoint resumes from the spine and drafts once."""
        clock, world, body = ManualClock(), FakeWorld(), InMemoryBody()
        steps = ScriptedSteps(world, owner="hz-s")
        settings = Settings(clock=clock, sleep=RecordingSleep())
        count = [0]

        def crash(_event: object) -> None:
            count[0] += 1
            if count[0] == 5:
                raise SimulatedCrash

        with (
            Spine.open(tmp_path, clock=clock, on_durable=[crash]) as spine,
            pytest.raises(SimulatedCrash),
        ):
            asyncio.run(
                start_turn(
                    SpineJournal.open(spine),
                    body,
                    steps,
                    settings,
                    turn="t1",
                    wakes=WAKES,
                    pins=Pins(1),
                )
            )
        with Spine.open(tmp_path, clock=clock) as spine:
            journal = SpineJournal.open(spine)
            assert key_action(journal, "hz-s@r1").turn == "t1"
            state = asyncio.run(resume_turn(journal, body, steps, settings, turn="t1"))
        assert (state.disposition, sum(world.performed.values())) == ("drafted", 1)

    def test_a_turn_is_read_from_its_own_start_only(self, tmp_path: Path) -> None:
        """Garbage before the turn's first line does not matter: it is never read."""
        clock = ManualClock()
        filled(tmp_path, clock, 3)
        with Spine.open(tmp_path, clock=clock) as spine:
            journal = SpineJournal.open(spine)
            journal.append("turn.started", {"cause": "asked"}, turn="t1", key="hz-s@r1")
            offset = journal.turn_offset("t1")
        assert offset is not None
        path = tmp_path / "session.jsonl"
        data = path.read_bytes()
        path.write_bytes(b"x" * (data.index(b"\n")) + data[data.index(b"\n") :])
        with Spine.open(tmp_path, clock=clock) as spine:
            index = SpineIndex.at_tail(spine)
            index.turn_offsets["t1"] = offset
            events = SpineJournal(spine, index).turn_events("t1")
        assert [e.kind for e in events] == ["turn.started"]

    def test_an_unknown_turn_start_is_a_coded_error(self, tmp_path: Path) -> None:
        """With an index kept by the host (at_tail), an unknown turn start is HZM060."""
        with (
            Spine.open(tmp_path, clock=ManualClock()) as spine,
            pytest.raises(MachineError, match="HZM060"),
        ):
            SpineJournal(spine, SpineIndex.at_tail(spine)).turn_events("t9")

    def test_the_scanned_index_equals_the_one_built_while_appending(self, tmp_path: Path) -> None:
        """SpineIndex.scan gives the offsets and keyed events the appends gave."""
        clock = ManualClock()
        with Spine.open(tmp_path, clock=clock) as spine:
            journal = SpineJournal.open(spine)
            journal.append("turn.started", {"keys": ["a@1", "a@2"]}, turn="t1", key="a@1")
            journal.append("turn.skipped", {"keys": ["a@3"]}, turn="t2", key="a@3")
            scanned = SpineIndex.scan(spine.path)
        assert scanned == journal.index


class TestUpgrades:
    def test_machines_registry_leaves_every_current_kind_alone(self) -> None:
        """At vocabulary 1 no kind is old: each reads as itself."""
        registry = upgrades()
        events = [
            make_event(seq=1, ts="2026-01-01T00:00:00.000Z", prev=None, kind=kind, data={})
            for kind in KINDS
        ]
        assert [registry.upgrade(e).kind for e in events] == list(KINDS)

    def test_an_old_kind_is_migrated_in_memory_and_the_file_is_unchanged(
        self, tmp_path: Path
    ) -> None:
        """draft.placed read as draft.placed.2 with a new field; the bytes stay."""
        clock = ManualClock()
        with Spine.open(tmp_path, clock=clock) as spine:
            journal = SpineJournal.open(spine)
            journal.append("turn.started", {}, turn="t1", key="k@1")
            journal.append("effect.started", {"effect": "place_draft"}, turn="t1", key="k@d")
            journal.append("effect.done", {"hash": "sha256:1"}, turn="t1", key="k@d")
            journal.append("draft.placed", {"key": "k@d"}, turn="t1", key="k@d")
        path = tmp_path / "session.jsonl"
        before = hashlib.sha256(path.read_bytes()).hexdigest()
        registry = upgrades()
        registry.register("draft.placed", "draft.placed.2", lambda d: {**d, "asset": None})
        with Spine.open(tmp_path, clock=clock, upgrades=registry) as spine:
            journal = SpineJournal(
                spine, SpineIndex.scan(path, upgrades=registry), upgrades=registry
            )
            events = journal.turn_events("t1")
        assert (events[-1].kind, dict(events[-1].data)) == (
            "draft.placed.2",
            {"key": "k@d", "asset": None},
        )
        assert fold("t1", events).effects["k@d"].event_seen
        assert hashlib.sha256(path.read_bytes()).hexdigest() == before


class TestGuard:
    def test_a_long_report_line_passes_the_spines_content_guard(self, tmp_path: Path) -> None:
        """turn.finished declares report a short text, so 300 characters are allowed."""
        clock, world = ManualClock(), FakeWorld()
        steps = ScriptedSteps(world, owner="hz-s")

        async def act(ctx: object, decided: object) -> Acted:
            return Acted("learned", {"report": "r" * 300})

        steps.act = act  # type: ignore[method-assign]
        settings = Settings(clock=clock, sleep=RecordingSleep())
        with Spine.open(tmp_path, clock=clock) as spine:
            state = asyncio.run(
                start_turn(
                    SpineJournal.open(spine),
                    InMemoryBody(),
                    steps,
                    settings,
                    turn="t1",
                    wakes=WAKES,
                    pins=Pins(1),
                )
            )
            assert spine.last is not None and len(spine.last.data["report"]) == 300
        assert state.disposition == "learned"
