"""hz on Postgres in the peer workload: a host embedding `machines` with its journal and
bodies in Postgres (docs/embedding.md, "Many machines on Postgres"), run by ``run.py``
with hz's own Python beside DBOS on Postgres.

The same workload as ``embed_worker.py`` (N replay-safe tool calls, then a draft placed
through the fake world, effect ledger and all) over `PostgresJournal` and `PostgresBody`
on ``PEERS_PG_URL`` (the database ``run.py`` made; Postgres as shipped:
``synchronous_commit=on``, so each append is one commit the server flushes), one
`Session` per turn, ``Session.resume`` after a crash. Modes and the JSON line each
prints are those of ``embed_worker.py``, without the worker's own fsyncs (it makes none:
the server's are counted by strace in ``run.py``).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from hz_worker import steps

from ledger.event import Event
from machines import Pins, Session, Settings, Wake, run_sync
from machines.crashkit.testing import ManualClock, RecordingSleep
from machines.stores.pg_journal import PostgresBody, PostgresJournal, connect

CONN: Any = None


def turn(n: int, name: str, crash_after: int = 0, resume: bool = False) -> float:
    """One turn of ``n`` calls started (or resumed); its wall time in seconds.
    ``crash_after`` ends the process (137) after that many tool results."""
    global CONN
    clock = ManualClock()
    settings = Settings(clock=clock, sleep=RecordingSleep())
    seen = [0]

    def crash(event: Event) -> None:
        seen[0] += event.kind == "tool.result"
        if crash_after and seen[0] == crash_after:
            os._exit(137)

    if CONN is None:
        CONN = connect(os.environ["PEERS_PG_URL"])
    journal = PostgresJournal(CONN, clock, on_durable=[crash])
    session = Session(journal, PostgresBody(CONN), steps(n, name), settings)
    start = time.perf_counter()
    if resume:
        run_sync(session.resume(name))
    else:
        run_sync(session.start(name, [Wake("asked", f"hz-peer@{name}")], Pins(1)))
    return time.perf_counter() - start


def main() -> None:
    mode, n = sys.argv[1], int(sys.argv[2])
    Path(sys.argv[3]).mkdir(parents=True, exist_ok=True)
    if mode == "steps":
        turn(n, "warm")  # connection, tables and first-use costs, not timed
        full = min(turn(n, f"t{r}") for r in range(3))
        empty = min(turn(0, f"z{r}") for r in range(3))
        print(json.dumps({"per_step_us": (full - empty) / n * 1e6, "run_us": full * 1e6}))
    elif mode == "once":
        turn(n, "once")
    elif mode == "crash":
        turn(n, "crashed", crash_after=n // 2)
    else:
        turn(n, "crashed", resume=True)
        print(json.dumps({"recovered": True}))


if __name__ == "__main__":
    main()
