"""A turn's cost against the session's age (issue 15 item 4): turn 1 of a session beside
turn ``AGE`` of another, with the offline model, under the real host (spine, bodies,
index, summaries when due). Also the view a turn starts from: read from the index and
the spine's tail (`heinzel.turns.view`) against reading the whole spine.

Target: turn ``AGE`` within 1.2x of turn 1. ``HZ_BENCH_AGE`` sets the age (default 300;
1000 takes a few minutes here), ``HZ_BENCH_ROUNDS`` the rounds (default 5). The machine
is shared, so the sessions are measured in interleaved rounds: each round runs turns 1-5
of a new session, five turns of a session at age `FULL` (where the context and the
``previous_turns`` tool's turns are as large as they get) and five of the old one; each
figure is the median over the rounds, in CPU time of this process (``process_time``,
what load from other processes distorts least), wall time beside it.
"""

from __future__ import annotations

import gc
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_turns import AT, setup

from heinzel.engine import SpineRecord, SpineView
from heinzel.logs import configure_logging
from heinzel.turns import Turns, default_adapters
from heinzel.turns.view import TOOL_TURNS, spine_view
from heinzel.vocabulary import HOST_HIDDEN
from ledger.spine import read_events
from machines import Wake, keys

AGE = int(os.environ.get("HZ_BENCH_AGE", "300"))
ROUNDS = int(os.environ.get("HZ_BENCH_ROUNDS", "5"))
FULL = TOOL_TURNS + 10
"""An age at which a turn's context and the ``previous_turns`` tool's turns are as large
as they get; what a turn costs beyond it grows with age alone."""
TARGET = 1.2


class Session:
    """One Heinzelmännchen of its own home, and how many turns it has had."""

    def __init__(self, root: Path) -> None:
        self.service, self.heinzel_id = setup(root)
        self.adapters = default_adapters(self.service.settings)
        self.turns = Turns(self.service)
        self.age = 0

    def turn(self) -> tuple[float, float]:
        """Run the next turn; its (CPU, wall) milliseconds."""
        self.age += 1
        wake = Wake("schedule", keys.schedule(self.heinzel_id, f"slot{self.age}"))
        cpu, wall = time.process_time(), time.perf_counter()
        self.turns.run_wakes(self.heinzel_id, [wake], adapters=self.adapters)
        return (time.process_time() - cpu) * 1000, (time.perf_counter() - wall) * 1000

    def grow(self, age: int) -> None:
        while self.age < age:
            self.turn()


def _median(values: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(v[0] for v in values), statistics.median(v[1] for v in values)


def _best(func: Callable[[], object], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        func()
        times.append(time.process_time() - start)
    return min(times) * 1000


def main() -> None:
    configure_logging("cli", stream=sys.stderr, clock=lambda: AT, level="warning")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        Session(root / "warm").grow(5)  # imports and first-use caches, in no figure
        mid, old = Session(root / "mid"), Session(root / "old")
        mid.grow(FULL)
        old.grow(AGE)
        first: list[tuple[float, float]] = []
        young: list[tuple[float, float]] = []
        at_mid: list[tuple[float, float]] = []
        at_old: list[tuple[float, float]] = []
        for n in range(ROUNDS):
            fresh = Session(root / f"young{n}")
            made = [fresh.turn() for _ in range(5)]
            first.append(made[0])
            young += made
            del fresh
            gc.collect()
            at_mid += [mid.turn() for _ in range(5)]
            at_old += [old.turn() for _ in range(5)]
        one, base, full, aged = (_median(v) for v in (first, young, at_mid, at_old))
        rows = (
            ("turn 1", one, ""),
            ("turns 1-5", base, ""),
            (f"turns {FULL + 1}-{mid.age} (view full)", full, f"  {full[0] / one[0]:.2f}x turn 1"),
            (f"turns {AGE + 1}-{old.age}", aged, f"  {aged[0] / one[0]:.2f}x turn 1"),
        )
        print(f"interleaved rounds: {ROUNDS}; median ms, CPU time (wall time in brackets)")
        for label, (cpu, wall), note in rows:
            print(f"  {label + ':':<28}{cpu:7.1f} ({wall:6.1f}){note}")
        print(
            f"turn {AGE} against turn 1: {aged[0] / one[0]:.2f}x CPU "
            f"({aged[1] / one[1]:.2f}x wall); "
            f"against turns 1-5 {aged[0] / base[0]:.2f}x; "
            f"against age {FULL} {aged[0] / full[0]:.2f}x (what grows with age alone)"
        )
        verdict = "PASS" if aged[0] / one[0] <= TARGET else "MISS"
        print(
            f"{verdict} turn {AGE} against turn 1: {aged[0] / one[0]:.2f}x CPU (target {TARGET}x)"
        )
        service, heinzel_id = old.service, old.heinzel_id
        path = service.home.spine_path(heinzel_id)
        lines = sum(1 for _ in read_events(path))
        keep = service.settings.heinzel.summary_keep_turns
        tail = _best(lambda: spine_view(service.index.db, heinzel_id, path, keep))
        whole = _best(
            lambda: SpineView(
                tuple(
                    SpineRecord(e.seq, e.turn, e.kind, e.data)
                    for e in read_events(path)
                    if e.kind not in HOST_HIDDEN
                )
            )
        )
        print(f"view over {lines} lines: tail {tail:.2f} ms, whole spine {whole:.2f} ms (CPU)")


if __name__ == "__main__":
    main()
