"""hz's other path in the peer workload: a host that is not hz, embedding `machines` as
docs/embedding.md says ("Durable on disk"), run by ``run.py`` with hz's own Python.

The same workload as ``hz_worker.py`` (N replay-safe tool calls, then a draft placed
through the fake world, effect ledger and all), written the way the page tells an
embedder to: ``Spine.open(directory, clock=..., on_durable=[crash_hook()])``,
``SpineJournal.open(spine, index=held)`` with the index kept from the last turn,
``DiskBody(directory, spine=spine)`` (one fsync per step) closed when a turn ends, one
`Session` per journal driving ``Session.start`` through `machines.run_sync`, and
``Session.resume`` after a crash.
Nothing of hz's turn host (its lazy writer, its heinzel index) is used. Modes and the
JSON line each prints are those of ``hz_worker.py``.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

from hz_worker import STAMPS, FsyncClock, paired, steps

from ledger.event import Event
from ledger.spine import Spine
from machines import DiskBody, Pins, Session, Settings, SpineIndex, SpineJournal, Wake, run_sync
from machines.crashkit.crash import crash_hook
from machines.crashkit.testing import ManualClock, RecordingSleep

HELD: dict[Path, SpineIndex] = {}
"""Each session's index as its last turn left it, as the page says a host keeps it."""


def turn(directory: Path, n: int, name: str, crash_after: int = 0, resume: bool = False) -> float:
    """One turn of ``n`` calls started (or, with ``resume``, resumed) as an embedder does;
    its wall time in seconds. ``crash_after`` ends the process (137) after that many."""
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
    with Spine.open(directory, clock=clock, on_durable=[crash_hook(), crash]) as spine:
        journal = SpineJournal.open(spine, index=HELD.get(directory))
        body = DiskBody(directory, spine=spine)
        session = Session(journal, body, steps(n, name), settings)
        start = time.perf_counter()
        try:
            if resume:
                run_sync(session.resume(name))
            else:
                run_sync(session.start(name, [Wake("asked", f"hz-peer@{name}")], Pins(1)))
        finally:
            body.close()
        took = time.perf_counter() - start
    HELD[directory] = journal.index
    return took


def timed_turn(directory: Path, n: int, name: str) -> tuple[float, float]:
    with FsyncClock() as fsyncs:
        took = turn(directory, n, name)
    return took, fsyncs.inside


def cpu_turn(directory: Path, n: int, name: str) -> float:
    with FsyncClock(stub=True):
        start = time.process_time()
        turn(directory, n, name)
        return time.process_time() - start


def fsyncs_of(directory: Path, n: int, name: str) -> int:
    with FsyncClock() as fsyncs:
        turn(directory, n, name)
    return fsyncs.count


def main() -> None:
    mode, n, directory = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
    if mode == "steps":
        session = directory / "session"
        turn(session, n, "warm")  # imports and first-use costs, not timed
        full, full_in = min(timed_turn(session, n, f"t{r}") for r in range(3))
        empty, empty_in = min(timed_turn(session, 0, f"z{r}") for r in range(3))
        fsyncs = [fsyncs_of(directory / f"c{r}", r * n, f"c{r}") for r in range(2)]
        cpu_full = statistics.median(cpu_turn(session, n, f"u{r}") for r in range(5))
        cpu_empty = statistics.median(cpu_turn(session, 0, f"v{r}") for r in range(5))
        print(
            json.dumps(
                {
                    "per_step_us": (full - empty) / n * 1e6,
                    "run_us": full * 1e6,
                    "fsync_per_step_us": (full_in - empty_in) / n * 1e6,
                    "cpu_per_step_us": (cpu_full - cpu_empty) / n * 1e6,
                    "cpu_run_us": cpu_full * 1e6,
                    "fsyncs_per_step": (fsyncs[1] - fsyncs[0]) / n,
                    "fsync_run_us": full_in * 1e6,
                    **paired(turn, session, n),
                }
            )
        )
    elif mode == "once":
        turn(directory, n, "once")
    elif mode == "crash":
        turn(directory, n, "crashed", crash_after=n // 2)
    else:
        turn(directory, n, "crashed", resume=True)
        print(json.dumps({"recovered": True}))


if __name__ == "__main__":
    main()
