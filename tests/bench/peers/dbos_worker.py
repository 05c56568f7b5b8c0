"""DBOS's side of the peer workload (run by ``run.py`` with the peers' Python): a
workflow of N ``@DBOS.step`` calls on DBOS's system database. Modes as in
``hz_worker.py`` (and ``once N DIR``: one workflow, for strace); recovery is DBOS's own
(``DBOS.launch`` resumes pending workflows).

The store is ``PEERS_STORE``: ``sqlite`` (DBOS's default: it sets no journal mode, so
SQLite's rollback journal), ``sqlite-wal`` (the same file put in WAL mode before DBOS
opens it: DBOS 3.4 has no setting for it, and ``journal_mode=WAL`` is kept in the
file, so every connection DBOS makes uses it; ``synchronous`` stays SQLite's FULL, so a
commit is durable when it returns), or ``postgres`` (``PEERS_PG_URL``, the database
made by ``run.py``; Postgres as shipped: ``synchronous_commit=on``)."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from pathlib import Path

from dbos import DBOS, SetWorkflowID

MODE, N, DIRECTORY = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
CRASH_AT = N // 2 if MODE == "crash" else -1

STORE = os.environ.get("PEERS_STORE", "sqlite")

DIRECTORY.mkdir(parents=True, exist_ok=True)
if STORE == "postgres":
    URL = os.environ["PEERS_PG_URL"]
else:
    URL = f"sqlite:///{DIRECTORY / 'dbos.sqlite'}"
    if STORE == "sqlite-wal":
        with sqlite3.connect(DIRECTORY / "dbos.sqlite") as conn:
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        assert mode == "wal", mode
DBOS(config={"name": "peerbench", "system_database_url": URL, "run_admin_server": False})


@DBOS.step()
def step(i: int) -> int:
    if i == CRASH_AT:
        os._exit(137)
    return i


@DBOS.workflow()
def flow(n: int) -> int:
    return sum(step(i) for i in range(n))


def timed(n: int, workflow_id: str) -> float:
    start = time.perf_counter()
    with SetWorkflowID(workflow_id):
        flow(n)
    return time.perf_counter() - start


def main() -> None:
    DBOS.launch()
    if MODE == "steps":
        timed(N, "warm")  # first-use costs, not timed
        full = min(timed(N, f"n{r}") for r in range(3))
        empty = min(timed(0, f"z{r}") for r in range(3))
        print(json.dumps({"per_step_us": (full - empty) / N * 1e6, "run_us": full * 1e6}))
    elif MODE == "once":
        timed(N, "once")
    elif MODE == "crash":
        timed(N, "crashed")
    else:
        DBOS.retrieve_workflow("crashed").get_result()
        print(json.dumps({"recovered": True}))
    DBOS.destroy()


if __name__ == "__main__":
    main()
