"""Record the golden spines of ``fixtures/spines/`` (run by hand, then commit).

``python tests/machines/golden_make.py`` rewrites them from the scripted steps of
`machines.crashkit.testing`; `tests/machines/test_golden.py` replays what is committed.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from pathlib import Path

from ledger.spine import Spine
from machines.core.resume import Pins, resume_turn, skip_turn, start_turn
from machines.core.runner import Settings
from machines.core.steps import Wait
from machines.crashkit.testing import (
    HANDOFF,
    SEARCH,
    FakeWorld,
    ManualClock,
    RecordingSleep,
    ScriptedSteps,
)
from machines.keys import Wake, asked, schedule
from machines.stores.journal import InMemoryBody
from machines.stores.spine_journal import SpineJournal

OUT = Path(__file__).resolve().parents[2] / "fixtures" / "spines"
OWNER = "hz-golden"


def record(name: str, work: object) -> None:
    directory = Path(tempfile.mkdtemp())
    clock = ManualClock()
    with Spine.open(directory, clock=clock) as spine:
        journal = SpineJournal(spine)
        asyncio.run(work(journal, clock))  # type: ignore[operator]
    shutil.copyfile(directory / "session.jsonl", OUT / f"{name}.jsonl")


async def drafted(journal: SpineJournal, clock: ManualClock) -> None:
    steps = ScriptedSteps(FakeWorld(), owner=OWNER, model_calls=2, tools=[SEARCH, HANDOFF])
    settings = Settings(clock=clock, sleep=RecordingSleep())
    wakes = [Wake("schedule", schedule(OWNER, "2026-10-30T15:00"))]
    await start_turn(journal, InMemoryBody(), steps, settings, turn="t1", wakes=wakes, pins=Pins(1))
    clock.advance(days=7)
    wake = Wake("schedule", schedule(OWNER, "2026-11-06T15:00"))
    skip_turn(journal, turn="t2", wakes=[wake], reason="nothing-moved")


async def waited(journal: SpineJournal, clock: ManualClock) -> None:
    wait = Wait(on={"kind": "answer", "key": "q1"}, output="section")
    steps = ScriptedSteps(FakeWorld(), owner=OWNER, decision="wait", wait=wait)
    settings = Settings(clock=clock, sleep=RecordingSleep())
    body = InMemoryBody()
    wakes = [Wake("asked", asked(OWNER, "r1"))]
    await start_turn(journal, body, steps, settings, turn="t1", wakes=wakes, pins=Pins(2))
    clock.advance(hours=5)
    await resume_turn(journal, body, steps, settings, turn="t1", woken_by="answer")


async def mismatch(journal: SpineJournal, clock: ManualClock) -> None:
    journal.append("turn.started", {"cause": "asked"}, turn="t1", key=asked(OWNER, "r1"))
    journal.append("step.started", {"step": "think", "input": None}, turn="t1")
    journal.append("step.started", {"step": "act", "input": None}, turn="t1")


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    for name, work in [("drafted", drafted), ("waited", waited), ("mismatch", mismatch)]:
        record(name, work)
    print(json.dumps(sorted(p.name for p in OUT.glob("*.jsonl"))))
