"""Jobs per second with 4 workers, hz on the Postgres journal beside DBOS's queue on
Postgres (``run.py`` calls `measure` with its temporary cluster; ``PEERS_JOBS`` jobs,
200 by default). Per system, on a database of its own: the jobs queued by one process
(untimed), then 4 worker processes started at once and timed from spawn until the last
exits with the queue empty: so the figure carries each worker's start-up, the same for
both. A job: 5 durable steps and one more (hz: a turn of 5 replay-safe tool calls and an
effect; DBOS: a workflow of 6 steps)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from pg import Cluster

HERE = Path(__file__).resolve().parent
WORKERS = 4


def _run(python: str, script: str, *args: str) -> None:
    done = subprocess.run(
        [python, str(HERE / script), *args],
        check=False,
        capture_output=True,
        text=True,
        env={**os.environ, "DBOS__APPVERSION": "peerjobs"},
    )
    if done.returncode != 0:
        raise SystemExit(f"{script} {args[0]} failed: {done.stderr[-2000:]}")


def rate(python: str, script: str, url: str, jobs: int) -> float:
    """Jobs per second of ``WORKERS`` processes of ``script`` draining ``jobs`` jobs."""
    _run(python, script, "enqueue", url, str(jobs))
    start = time.perf_counter()
    workers = [
        subprocess.Popen(
            [python, str(HERE / script), "work", url],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, "DBOS__VMID": f"worker{i}", "DBOS__APPVERSION": "peerjobs"},
        )
        for i in range(WORKERS)
    ]
    for worker in workers:
        _, err = worker.communicate()
        if worker.returncode != 0:
            raise SystemExit(f"{script} work failed: {err.decode()[-2000:]}")
    return jobs / (time.perf_counter() - start)


def measure(server: Cluster, hz_python: str, peers_python: str, rounds: int) -> list[str]:
    jobs = int(os.environ.get("PEERS_JOBS", "200"))
    rates: dict[str, list[float]] = {"hz embedder on Postgres": [], "DBOS Postgres queue": []}
    for r in range(rounds):
        for name, python, script in (
            ("hz embedder on Postgres", hz_python, "jobs_hz_pg.py"),
            ("DBOS Postgres queue", peers_python, "jobs_dbos_pg.py"),
        ):
            database = f"jobs_{script.split('.')[0]}_{r}"
            server.createdb(database)
            rates[name].append(rate(python, script, server.url(database), jobs))
    lines = [
        f"{jobs} jobs (5 durable steps and one more each), {WORKERS} worker processes, "
        f"timed from spawn to the last exit, median of {rounds}:"
    ]
    for name, values in rates.items():
        lines.append(f"  {name:25s} {sorted(values)[len(values) // 2]:7.1f} jobs/s")
    return lines
