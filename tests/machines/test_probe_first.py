"""Probe before a first perform: a spine that lost its end does not double an effect.

A host's spine may come back shorter than the world it acted on: restored from an older
copy, or cut at a line boundary. The key rule then starts the lost jobs again, and their
effects are new keys to the spine. An `Effect(probe_first=True)` asks its probe before
that first perform, so an e-mail or a payment the lost lines recorded is recorded as done,
never done twice; an effect without it is done again (the host below counts both).
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

from ledger.spine import Spine
from machines import DiskBody
from machines.core.context import TurnContext
from machines.core.effects import Effect, Presence, WorldProbe
from machines.core.resume import Pins
from machines.core.runner import Settings
from machines.core.session import Session
from machines.core.steps import Acted
from machines.crashkit.testing import ManualClock, RecordingSleep
from machines.errors import MachineError
from machines.keys import Wake
from machines.stores.spine_journal import SpineJournal

JOBS = ("job-0", "job-1", "job-2")


class Mailer:
    """The host's world: e-mails and payments, counted by key (it outlives any spine)."""

    def __init__(self) -> None:
        self.done: dict[str, int] = {}

    async def perform(self, key: str) -> dict[str, str]:
        self.done[key] = self.done.get(key, 0) + 1
        return {"sent": key}

    async def probe(self, key: str) -> Presence:
        return "present" if key in self.done else "absent"


class JobSteps:
    """One job per turn: an e-mail and a payment, keyed by the job."""

    def __init__(self, world: Mailer, *, probe_first: bool) -> None:
        self.world = world
        self.probe_first = probe_first

    async def gather(self, ctx: TurnContext) -> Any:
        return {"job": str(ctx.causes[0]["key"]).split("@")[1]}

    async def think(self, ctx: TurnContext, gathered: Any) -> Any:
        return gathered

    async def outcome(self, ctx: TurnContext, thought: Any) -> Any:
        return thought

    async def act(self, ctx: TurnContext, decided: Any) -> Acted:
        probe = WorldProbe(self.world.probe)
        for name in ("email", "payment"):
            key = f"host@{name}:{decided['job']}"
            effect = Effect(
                name, key, self.world.perform, probe, f"{name}.sent", probe_first=self.probe_first
            )
            await ctx.effect(effect)
        return Acted("drafted")


def run_jobs(directory: Path, world: Mailer, jobs: tuple[str, ...], *, probe_first: bool) -> None:
    """A host's start: open the spine, its journal and body, offer every job (the key
    rule starts the ones the spine does not know) and run them, one turn each."""
    clock = ManualClock()
    settings = Settings(clock=clock, sleep=RecordingSleep())
    with Spine.open(directory, clock=clock) as spine:
        journal = SpineJournal.open(spine)
        body = DiskBody(directory)
        session = Session(journal, body, JobSteps(world, probe_first=probe_first), settings)
        for job in jobs:
            turns = len({e.turn for e in spine.events() if e.kind == "turn.started"})
            wake = Wake("asked", f"host@{job}")
            asyncio.run(session.wake([wake], turn=f"turn-{turns}", pins=Pins()))
        body.close()


def line_ends(path: Path) -> list[int]:
    data = path.read_bytes()
    return [at + 1 for at, byte in enumerate(data) if byte == ord("\n")]


@pytest.mark.parametrize("probe_first", [True, False])
def test_a_spine_cut_at_any_line_does_not_double_a_probed_first_effect(
    tmp_path: Path, probe_first: bool
) -> None:
    """The last job's lines cut at every line boundary (the spine an older copy would
    give back), then the host restarts and offers every job again: with ``probe_first``
    each e-mail and payment happened once; without it some happen twice."""
    world = Mailer()
    first = tmp_path / "first"
    run_jobs(first, world, JOBS, probe_first=probe_first)
    assert list(world.done.values()) == [1] * 2 * len(JOBS)
    spine_path = first / "session.jsonl"
    ends = line_ends(spine_path)
    with Spine.open(first, clock=ManualClock()) as spine:
        last_start = min(e.offset for e in spine.events() if e.turn == "turn-2")
    cuts = [end for end in ends if end >= last_start][:-1]
    doubled = []
    for n, cut in enumerate([last_start, *cuts]):
        copy = tmp_path / f"cut-{n}"
        shutil.copytree(first, copy)
        with open(copy / "session.jsonl", "r+b") as handle:
            handle.truncate(cut)
        counted = Mailer()
        counted.done = dict(world.done)
        run_jobs(copy, counted, JOBS, probe_first=probe_first)
        doubled += [key for key, times in counted.done.items() if times != 1]
        assert set(counted.done) == set(world.done)
    if probe_first:
        assert doubled == []
    else:
        assert doubled  # the lost lines' effects are done again: what probe_first prevents


def test_probe_first_without_a_probe_is_refused() -> None:
    """An effect that asks to probe first but has no probe is HZM076."""
    world = Mailer()
    with pytest.raises(MachineError, match="HZM076"):
        Effect("email", "host@email:x", world.perform, None, "email.sent", probe_first=True)
