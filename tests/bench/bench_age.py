"""A turn's cost against the session's age: turns 1-5 of one session (the baseline) against
five turns after ``AGE`` turns of the same session, with the offline model, under the real
host (spine, bodies, index, summaries when due). Also the view a turn starts from: read from
the index and the spine's tail (`heinzel.turns.view`) against reading the whole spine.

Target (issue 15): the old turns within 1.2x of the young ones. ``HZ_BENCH_AGE`` sets the
age (default 300; 1000 takes a few minutes here). Also printed: turns at the age where the
view stops growing (``FULL``), against which the old ones show what grows with age alone.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
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
FULL = TOOL_TURNS + 10
"""An age at which a turn's view is as large as it gets: the ``previous_turns`` tool's
`TOOL_TURNS` turns and the kept ones are all there, so later turns read no more."""


def best_of(func: object, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return min(times) * 1000


def main() -> None:
    configure_logging("cli", stream=sys.stderr, clock=lambda: AT, level="warning")
    with tempfile.TemporaryDirectory() as tmp:
        service, heinzel_id = setup(Path(tmp))
        adapters = default_adapters(service.settings)
        turns = Turns(service)
        count = [0]

        def turn() -> None:
            count[0] += 1
            wake = Wake("schedule", keys.schedule(heinzel_id, f"slot{count[0]}"))
            turns.run_wakes(heinzel_id, [wake], adapters=adapters)

        young = sorted(best_of(turn, 1) for _ in range(5))[2]
        while count[0] < FULL:
            turn()
        full = sorted(best_of(turn, 1) for _ in range(5))[2]
        while count[0] < AGE:
            turn()
        old = sorted(best_of(turn, 1) for _ in range(5))[2]
        path = service.home.spine_path(heinzel_id)
        lines = sum(1 for _ in read_events(path))
        print(f"turn at age 1-5 (baseline):  {young:7.1f} ms (median of 5)")
        print(f"turn at age {FULL:>4}:           {full:7.1f} ms  {full / young:5.2f}x  (view full)")
        print(f"turn at age {AGE:>4}:           {old:7.1f} ms  {old / young:5.2f}x  target 1.2x")
        print(
            f"  age {AGE} against age {FULL}:     {old / full:5.2f}x  (what grows with age alone)"
        )
        tail = best_of(lambda: spine_view(service.index.db, heinzel_id, path, 5))
        whole = best_of(
            lambda: SpineView(
                tuple(
                    SpineRecord(e.seq, e.turn, e.kind, e.data)
                    for e in read_events(path)
                    if e.kind not in HOST_HIDDEN
                )
            )
        )
        print(f"view over {lines} lines: tail {tail:.2f} ms, whole spine {whole:.2f} ms")


if __name__ == "__main__":
    main()
