"""DBOS's side of the peer workload (run by ``run.py`` with the peers' Python): a
workflow of N ``@DBOS.step`` calls on DBOS's SQLite system database. Modes as in
``hz_worker.py``; recovery is DBOS's own (``DBOS.launch`` resumes pending workflows)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from dbos import DBOS, SetWorkflowID

MODE, N, DIRECTORY = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
CRASH_AT = N // 2 if MODE == "crash" else -1

DIRECTORY.mkdir(parents=True, exist_ok=True)
DBOS(
    config={
        "name": "peerbench",
        "system_database_url": f"sqlite:///{DIRECTORY / 'dbos.sqlite'}",
        "run_admin_server": False,
    }
)


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
    elif MODE == "crash":
        timed(N, "crashed")
    else:
        DBOS.retrieve_workflow("crashed").get_result()
        print(json.dumps({"recovered": True}))
    DBOS.destroy()


if __name__ == "__main__":
    main()
