"""How long one append holds the event loop: `PostgresJournal.append` (a committed row on
a temporary local cluster, `tests.bench.peers.pg.cluster`) beside a spine append (its
fsync), 300 of each, median and 95th percentile. psycopg is called synchronously, so this
is what a host's loop waits per recorded event (docs/embedding.md, "Many machines on
Postgres"). Run: ``.venv/bin/python -m tests.bench.peers.pg_loop_hold``."""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from ledger.spine import Spine
from machines.stores.pg_journal import PostgresJournal, connect
from tests.bench.peers.pg import cluster

N = 300


def clock() -> datetime:
    return datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def timed(append: Callable[[int], object]) -> tuple[float, float]:
    """The median and the 95th percentile of ``N`` calls, in ms."""
    took = []
    for n in range(N):
        start = time.perf_counter()
        append(n)
        took.append(time.perf_counter() - start)
    return statistics.median(took) * 1e3, sorted(took)[int(N * 0.95)] * 1e3


def main() -> None:
    with cluster(None) as made:
        if isinstance(made, str):
            raise SystemExit(f"no Postgres server: {made}")
        made.createdb("hold")
        with connect(made.url("hold")) as conn:
            journal = PostgresJournal(conn, clock)
            pg = timed(lambda n: journal.append("step.done", {"n": n}, turn="t1"))
    with tempfile.TemporaryDirectory() as scratch, Spine.open(Path(scratch), clock=clock) as spine:
        disk = timed(lambda n: spine.append("step.done", {"n": n}, turn="t1"))
    print(
        f"postgres append: median {pg[0]:.2f} ms, p95 {pg[1]:.2f} ms; "
        f"spine append: median {disk[0]:.2f} ms, p95 {disk[1]:.2f} ms ({N} each)"
    )


if __name__ == "__main__":
    main()
