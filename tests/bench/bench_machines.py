"""The turn machine's cost: per checkpointed step against a bare spine append, and
resume time against the number of events before the turn (it must not grow), and the
check of a new effect key against the spine file (`recorded_done`) beside a search of the
whole file."""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import time
from pathlib import Path

from ledger.event import format_ts, make_event
from ledger.spine import Spine
from machines.core.fold import fold
from machines.core.resume import Pins, prepare_resume, start_turn
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
from machines.stores.spine_journal import SpineJournal, done_in_file

TURNS = 30
SIZES = (1_000, 10_000, 100_000)


def bare_appends(directory: Path, n: int) -> float:
    clock = ManualClock()
    with Spine.open(directory, clock=clock) as spine:
        start = time.perf_counter()
        for i in range(n):
            spine.append("step.started", {"step": "think", "input": f"sha256:{i:064x}"}, turn="t")
        return (time.perf_counter() - start) / n


def machine_appends(directory: Path) -> tuple[float, int]:
    clock = ManualClock()
    settings = Settings(clock=clock, sleep=RecordingSleep())
    with Spine.open(directory, clock=clock) as spine:
        journal = SpineJournal.open(spine)
        start = time.perf_counter()
        for n in range(TURNS):
            steps = ScriptedSteps(FakeWorld(), owner=f"hz-bench{n}")
            wakes = [Wake("asked", f"hz-bench@r{n}")]
            asyncio.run(
                start_turn(
                    journal,
                    InMemoryBody(),
                    steps,
                    settings,
                    turn=f"t{n}",
                    wakes=wakes,
                    pins=Pins(1),
                )
            )
        elapsed = time.perf_counter() - start
        appends = spine.last.seq if spine.last else 0
    return elapsed / appends, appends


def spine_with(directory: Path, filler: int) -> None:
    """A spine of ``filler`` usage lines written in one go and synced (setup, not timed)."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    clock = ManualClock()
    prev, lines = None, []
    for seq in range(1, filler + 1):
        event = make_event(
            seq=seq, ts=format_ts(clock()), prev=prev, kind="usage", data={"tokens": seq}
        )
        prev = event.hash
        lines.append(event.line())
    with (directory / "session.jsonl").open("wb") as handle:
        handle.write(b"".join(lines))
        handle.flush()
        os.fsync(handle.fileno())


def resume_time(directory: Path, filler: int) -> tuple[float, float]:
    spine_with(directory, filler)
    clock = ManualClock()
    settings = Settings(clock=clock, sleep=RecordingSleep())
    steps = ScriptedSteps(FakeWorld(), owner="hz-bench")
    body = InMemoryBody()
    count = [0]

    def crash(_event: object) -> None:
        count[0] += 1
        if count[0] == 5:
            raise SimulatedCrash

    with Spine.open(directory, clock=clock, on_durable=[crash]) as spine:
        journal = SpineJournal.open(spine)
        with contextlib.suppress(SimulatedCrash):
            asyncio.run(
                start_turn(
                    journal,
                    body,
                    steps,
                    settings,
                    turn="t1",
                    wakes=[Wake("asked", "hz-bench@r")],
                    pins=Pins(1),
                )
            )
    with Spine.open(directory, clock=clock) as spine:
        journal = SpineJournal.open(spine)  # the scan is not timed: the fold is
        start = time.perf_counter()
        fold("t1", journal.turn_events("t1"))
        read = time.perf_counter() - start
        start = time.perf_counter()
        run = prepare_resume(journal, body, steps, settings, turn="t1")
        assert run is not None
        asyncio.run(run.drive())
        return read, time.perf_counter() - start


def new_key_check(directory: Path, filler: int) -> tuple[float, float]:
    """What the effect ledger pays to check a new key against the spine file: a search of
    the whole file (the former `recorded_done`) against `recorded_done` after a scan (only
    the bytes past what the scan read), interleaved, best of 20 each."""
    spine_with(directory, filler)
    whole, tail = [], []
    with Spine.open(directory, clock=ManualClock()) as spine:
        journal = SpineJournal.open(spine)
        for i in range(20):
            start = time.perf_counter()
            done_in_file(spine.path, f"new-{i}")
            whole.append(time.perf_counter() - start)
            start = time.perf_counter()
            journal.recorded_done(f"new-{i}")
            tail.append(time.perf_counter() - start)
    return min(whole), min(tail)


def main() -> None:
    with tempfile.TemporaryDirectory() as root:
        base = Path(root)
        runs = [machine_appends(base / f"machine-{i}") for i in range(3)]
        machine, appends = min(runs)
        bare = min(bare_appends(base / f"bare-{i}", appends) for i in range(3))
        print(
            f"checkpointed step ({TURNS} full turns, {appends} appends, best of 3): "
            f"{machine * 1e3:.3f} ms/append"
        )
        print(f"bare spine append (baseline, best of 3): {bare * 1e3:.3f} ms/append")
        print(f"ratio machine/bare: {machine / bare:.2f}")
        times = {}
        for n in SIZES:
            samples = [resume_time(base / f"resume-{n}-{i}", n) for i in range(5)]
            times[n] = (min(s[0] for s in samples), min(s[1] for s in samples))
        first_read, first_resume = times[SIZES[0]]
        for n, (read, resume) in times.items():
            print(
                f"after {n:>7} preceding events (best of 5): read+fold {read * 1e3:.2f} ms "
                f"(x{read / first_read:.2f}), whole resume {resume * 1e3:.2f} ms "
                f"(x{resume / first_resume:.2f})"
            )
        for n in SIZES:
            whole, tail = new_key_check(base / f"key-{n}", n)
            print(
                f"a new effect key after {n:>7} events: recorded_done {tail * 1e6:8.1f} us "
                f"against {whole * 1e6:8.1f} us searching the whole file"
            )


if __name__ == "__main__":
    main()
