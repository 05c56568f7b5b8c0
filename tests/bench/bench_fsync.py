"""Fsyncs per durable step of a drafted turn, against every line and record on its own.

The offline drafted turn of `bench_turns` (two model requests, two tool calls, one
effect: five durable steps) run through `Turns.run_wakes` with ``os.fsync`` counted, once
as hz runs it (lazy and unsynced lines, the turn body fsynced once at the turn's end:
docs/spine.md, "One fsync per step") and once, in the same run, with every spine line
and body record fsynced on its own (the former way). Wall time per turn beside both; the
document's own fsyncs (the draft's atomic write) are counted apart from the record's.
"""

from __future__ import annotations

import collections
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_turns

import heinzel.turns.host as host
from heinzel.logs import configure_logging
from heinzel.turns import Turns, default_adapters
from ledger.bodies import Bodies
from ledger.spine import Spine, read_events
from machines import Wake, keys

ROUNDS = 10
STEP_KINDS = ("model.request", "step.tool", "effect.started")
"""A durable step's line; a model request's ``tools`` count one step per call it carries."""


def _each_on_its_own(spine: Spine, bodies: Bodies) -> Callable[[], None]:
    """The former way: no lazy lines, every body record fsynced when written."""
    bodies.defer_fsync = False
    return spine.sync


def _run(root: Path, lazy: bool) -> tuple[collections.Counter[str], int, int, float]:
    """Fsyncs by file kind over ROUNDS drafted turns, the turns' steps and lines, seconds."""
    service, heinzel_id = bench_turns.setup(root)
    adapters = default_adapters(service.settings)
    wakes = [Wake("schedule", keys.schedule(heinzel_id, "warm"))]
    Turns(service).run_wakes(heinzel_id, wakes, adapters=adapters)
    counts: collections.Counter[str] = collections.Counter()
    real = os.fsync

    def counted(fd: int) -> None:
        name = os.readlink(f"/proc/self/fd/{fd}")
        kind = "spine" if name.endswith("session.jsonl") else "body"
        if name.endswith("/turns"):
            kind = "turns/"
        elif not name.endswith(".jsonl"):
            kind = "document (the draft's file, its directory)"
        counts[kind] += 1
        real(fd)

    original: Callable[..., Any] = host.write_lazily
    before = len(list(read_events(service.home.spine_path(heinzel_id))))
    os.fsync = counted  # type: ignore[assignment]
    if not lazy:
        host.write_lazily = _each_on_its_own  # type: ignore[assignment]
    try:
        start = time.perf_counter()
        for n in range(ROUNDS):
            wake = Wake("schedule", keys.schedule(heinzel_id, f"slot{n}"))
            (state,) = Turns(service).run_wakes(heinzel_id, [wake], adapters=adapters)
            assert state.disposition == "drafted", state
        seconds = (time.perf_counter() - start) / ROUNDS
    finally:
        os.fsync = real
        host.write_lazily = original  # type: ignore[assignment]
    events = list(read_events(service.home.spine_path(heinzel_id)))[before:]
    calls = sum(len(e.data.get("tools", ())) for e in events if e.kind == "model.request")
    steps = (sum(e.kind in STEP_KINDS for e in events) + calls) // ROUNDS
    return counts, steps, len(events) // ROUNDS, seconds


def main() -> None:
    configure_logging("cli", stream=sys.stderr, clock=lambda: bench_turns.AT, level="warning")
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        for n, lazy in enumerate((False, True, False, True)):
            rows.append((lazy, *_run(Path(tmp) / f"r{n}", lazy)))
    for label, lazy in (("each on its own (former)", False), ("shared (hz)", True)):
        mine = [r for r in rows if r[0] == lazy]
        _, counts, steps, lines, _ = mine[-1]
        seconds = min(r[4] for r in mine)
        total = sum(counts.values()) / ROUNDS
        parts = ", ".join(f"{k} {v / ROUNDS:g}" for k, v in sorted(counts.items()))
        print(f"{label:26s} {total:5.1f} fsyncs per drafted turn ({parts})")
        journal = total - sum(v for k, v in counts.items() if k.startswith("document")) / ROUNDS
        print(f"{'':26s} {total / steps:5.2f} per durable step ({steps} steps, {lines} lines)")
        print(f"{'':26s} {journal / steps:5.2f} per durable step, the record alone")
        print(f"{'':26s} {seconds * 1000:7.2f} ms per turn")


if __name__ == "__main__":
    main()
