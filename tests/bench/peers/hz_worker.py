"""hz's side of the peer workload (run by ``run.py`` with hz's own Python).

A durable step is one replay-safe tool call in a turn of `machines` over a real spine
and `DiskBody`, written as hz's turn host writes (`heinzel.turns.record.write_lazily`):
the call's one ``tool.result`` line fsynced, its result written to the body, which is
fsynced once when the turn ends, and the lines no act waits for (``step.started``,
``effect.done``, ``draft.placed``) written with the next line (docs/spine.md, "One fsync
per step"). A turn makes no model request (the peers' workflows make none) and its act
places one draft through the fake world under a key of its own, effect ledger and all
(``effect.started`` fsynced before it): hz's fixed cost per workflow, beside the peers'
start and end; a turn of N calls makes N + 4 fsyncs. What hz's turn host does besides
and this worker does not: the heinzel index's rows per line (SQLite, ``on_durable``),
the contract and the session's view read at the turn's start. Where the host's journal
answers from that index, this worker keeps its journal's `SpineIndex` in memory from
one turn of a session to the next (the first turn in a process scans the spine), and
reads at a turn's start only the spine's lines after it (`SpineJournal.open` with
``index``); like the host it drives each turn on its thread's one event loop
(`machines.run_sync`). Every turn of a mode runs in one session, as the
peers' workflows share one store. Modes, each printing one JSON
line: ``steps N DIR`` (the marginal cost of a step: the best of 3 turns of N calls
less the best of 3 of none, after one untimed turn, in this process; beside it what of
that is hz's and what the kernel's: the time spent inside ``os.fsync`` per step in those
turns, and the CPU time per step, ``time.process_time`` of turns whose fsyncs are
stubbed out, medians of 5; and the step beside the fsync floor measured alike in this
process, `paired`), ``crash N DIR``
(a turn of N calls killed by the process's own exit 137 after half of them),
``recover N DIR`` (a whole new process resumes that turn to its end; ``run.py`` times
the process).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from heinzel.turns.record import write_lazily
from ledger.bodies import Bodies
from ledger.event import Event
from ledger.spine import Spine
from machines import (
    DiskBody,
    Pins,
    Settings,
    SpineIndex,
    SpineJournal,
    Wake,
    run_sync,
    start_turn,
)
from machines.core.resume import prepare_resume
from machines.core.tools import ToolDecl
from machines.crashkit.testing import FakeWorld, ManualClock, RecordingSleep, ScriptedSteps


def steps(n: int, name: str) -> ScriptedSteps:
    """``n`` replay-safe calls, then a draft placed under a key of this turn's own (a
    key shared by the session's turns would be placed once, by its first turn)."""
    tools = [ToolDecl(f"tool{i}", True) for i in range(n)]
    return ScriptedSteps(FakeWorld(), owner=f"hz-peer-{name}", tools=tools, model_calls=0)


def body(spine: Spine, directory: Path) -> DiskBody:
    """The turn's body and spine as hz's turn host writes them (`write_lazily`): body
    records written and fsynced at the turn's end, the lines no act waits for held back
    and written with the next one (docs/spine.md, "One fsync per step")."""
    bodies = Bodies(directory / "bodies", defer_fsync=True)
    write_lazily(spine, bodies)
    return DiskBody(bodies)


HELD: dict[Path, SpineIndex] = {}
"""Each session's index as its last turn left it (the host's is the heinzel index)."""

STAMPS: list[tuple[float, int]] = []
"""When each ``tool.result`` line of the last turn was durable (its ``on_durable``), and
its size in bytes: the period between two is one whole step, its CPU and its fsync."""


def turn(directory: Path, n: int, name: str, crash_after: int = 0) -> float:
    clock = ManualClock()
    settings = Settings(clock=clock, sleep=RecordingSleep())
    seen = [0]
    STAMPS.clear()

    def crash(event: Event) -> None:
        if event.kind == "tool.result":
            STAMPS.append((time.perf_counter(), event.size))
            seen[0] += 1
        if crash_after and seen[0] == crash_after:
            os._exit(137)

    directory.mkdir(parents=True, exist_ok=True)
    with Spine.open(directory, clock=clock, on_durable=[crash]) as spine:
        journal = SpineJournal.open(spine, index=HELD.get(directory))
        start = time.perf_counter()
        run_sync(
            start_turn(
                journal,
                body(spine, directory),
                steps(n, name),
                settings,
                turn=name,
                wakes=[Wake("asked", f"hz-peer@{name}")],
                pins=Pins(1),
            )
        )
        took = time.perf_counter() - start
    HELD[directory] = journal.index
    return took


class FsyncClock:
    """``os.fsync`` counted (``count``) and timed (``inside``: seconds spent in it), or
    stubbed out (``stub``)."""

    def __init__(self, *, stub: bool = False) -> None:
        self.real, self.stub, self.inside, self.count = os.fsync, stub, 0.0, 0

    def __call__(self, fd: int) -> None:
        self.count += 1
        if self.stub:
            return
        start = time.perf_counter()
        try:
            self.real(fd)
        finally:
            self.inside += time.perf_counter() - start

    def __enter__(self) -> FsyncClock:
        os.fsync = self  # type: ignore[assignment]
        return self

    def __exit__(self, *_: object) -> None:
        os.fsync = self.real


def timed_turn(directory: Path, n: int, name: str) -> tuple[float, float]:
    """A turn's wall time and the time its ``os.fsync`` calls took, in seconds."""
    with FsyncClock() as fsyncs:
        took = turn(directory, n, name)
    return took, fsyncs.inside


def cpu_turn(directory: Path, n: int, name: str) -> float:
    """The CPU time (``time.process_time``, every thread) of a turn with fsync stubbed."""
    with FsyncClock(stub=True):
        start = time.process_time()
        turn(directory, n, name)
        return time.process_time() - start


def fsyncs_of(directory: Path, n: int, name: str) -> int:
    """The ``os.fsync`` calls of one turn of ``n`` steps."""
    with FsyncClock() as fsyncs:
        turn(directory, n, name)
    return fsyncs.count


def paired(turn: Callable[..., float], session: Path, n: int, reps: int = 9) -> dict[str, float]:
    """A step beside the fsync floor, measured alike, in this process and alternated
    rep by rep (which of the two goes first alternating too): the step as the mean period
    from the first ``tool.result`` of a turn of ``n`` calls made durable to its last
    (`STAMPS`: each period is a whole step, its CPU and its fsync, the turn's fixed lines
    outside it); the floor as the mean period between the fsync returns of ``n`` appends
    of the step's own line size to a file in the spine's directory, kept open from one
    rep to the next. Medians of each and of the per-rep ratio (microseconds)."""
    turn(session, n, "paired")  # untimed: the size of its last line is the floor's
    size = STAMPS[-1][1]
    fd = os.open(session / "floor", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    steps: list[float] = []
    floors: list[float] = []

    def step(rep: int) -> None:
        turn(session, n, f"p{rep}")
        (first, _), (last, _) = STAMPS[0], STAMPS[-1]
        steps.append((last - first) / (n - 1))

    def floor() -> None:
        line = b"x" * (size - 1) + b"\n"
        stamps = []
        for _ in range(n):
            os.write(fd, line)
            os.fsync(fd)
            stamps.append(time.perf_counter())
        floors.append((stamps[-1] - stamps[0]) / (n - 1))

    try:
        floor()  # the file's creation and first block, not counted
        floors.clear()
        for rep in range(reps):
            if rep % 2:
                floor()
                step(rep)
            else:
                step(rep)
                floor()
    finally:
        os.close(fd)
    return {
        "paired_step_us": statistics.median(steps) * 1e6,
        "paired_floor_us": statistics.median(floors) * 1e6,
        "paired_ratio": statistics.median(s / f for s, f in zip(steps, floors, strict=True)),
        "line_bytes": size,
    }


def main() -> None:
    mode, n, directory = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
    if mode == "steps":
        session = directory / "session"  # one session, as the peers' workflows share a store
        turn(session, n, "warm")  # imports and first-use costs, not timed
        full, full_in = min(timed_turn(session, n, f"t{r}") for r in range(3))
        empty, empty_in = min(timed_turn(session, 0, f"z{r}") for r in range(3))
        fsyncs = [fsyncs_of(directory / f"c{r}", r * n, f"c{r}") for r in range(2)]
        cpu_full = statistics.median(cpu_turn(session, n, f"u{r}") for r in range(5))
        cpu_empty = statistics.median(cpu_turn(session, 0, f"v{r}") for r in range(5))
        per_step = {"per_step_us": (full - empty) / n * 1e6, "run_us": full * 1e6}
        kernel = {"fsync_per_step_us": (full_in - empty_in) / n * 1e6}
        cpu = {"cpu_per_step_us": (cpu_full - cpu_empty) / n * 1e6, "cpu_run_us": cpu_full * 1e6}
        counted = {"fsyncs_per_step": (fsyncs[1] - fsyncs[0]) / n}
        alike = paired(turn, session, n)
        print(
            json.dumps(
                {**per_step, **kernel, **cpu, **counted, "fsync_run_us": full_in * 1e6, **alike}
            )
        )
    elif mode == "once":
        turn(directory, n, "once")
    elif mode == "crash":
        turn(directory, n, "crashed", crash_after=n // 2)
    else:
        clock = ManualClock()
        settings = Settings(clock=clock, sleep=RecordingSleep())
        with Spine.open(directory, clock=clock) as spine:
            journal = SpineJournal.open(spine)
            run = prepare_resume(
                journal, body(spine, directory), steps(n, "crashed"), settings, turn="crashed"
            )
            assert run is not None
            run_sync(run.drive())
        print(json.dumps({"recovered": True}))


if __name__ == "__main__":
    main()
