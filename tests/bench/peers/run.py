"""``make bench-peers``: hz beside DBOS (SQLite) and LangGraph (SqliteSaver, sync) on the
same workload, interleaved in one run, with the fsync floor of the same disk measured
between them (issue 15, item 8).

Per round, for each system in turn: the marginal cost of one durable step (a workflow of
N steps less one of none, each the best of 3 after an untimed run, inside one process),
then a crash halfway through a workflow of N steps (the process exits 137 inside a step)
and the whole process that recovers it and runs it to its end, timed from spawn to exit.
The floor is one small append and ``fsync`` on a file in the same directory, printed two
ways: the median of 200 single ones, and N in a row, the best of 3, per append: the
estimator a step is measured by (a mean over a run, so the disk's slow commits count in
both; a median of single fsyncs leaves them out, and a step's ratio to it overstates
hz's part). Medians over the rounds; every figure printed beside the others, and each
peer as a ratio to hz. Also per round: a whole workflow of 5 steps in one process (start
to end, the best of 3 after an untimed one), and hz's fsyncs per durable step (counted
by its worker). hz's step and 5-step run are then split into whose time they are: the
time inside ``os.fsync`` (the kernel's and the disk's), hz's CPU time with fsync stubbed
out (``time.process_time``), and the rest (waking after an fsync, waiting for a core on
a loaded machine).

Then listing 500 and 10,000 of them, for the three, as a whole process and in process
(``listing.py``; ``PEERS_LISTING=0`` leaves it out).

Usage: ``python tests/bench/peers/run.py --peers-python .bench-peers-venv/bin/python``
(hz runs with the Python that runs this script). ``PEERS_N`` and ``PEERS_ROUNDS`` set
the workflow size (default 20) and the rounds (default 3).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from listing import measure

HERE = Path(__file__).resolve().parent
WORKERS = {"hz": "hz_worker.py", "DBOS": "dbos_worker.py", "LangGraph": "langgraph_worker.py"}


def fsync_floor_us(directory: Path, n: int, count: int = 200) -> tuple[float, float]:
    """The fsync floor two ways: the median of ``count`` appends of 64 bytes, each followed
    by ``fsync``; and the way a step is measured (the best of 3 runs, after one untimed, of
    ``n`` such appends in a row, per append: a mean, so it carries the disk's slow commits
    as a workflow of ``n`` steps does, which a median leaves out)."""
    path = directory / "floor"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def append() -> None:
        os.write(fd, b"x" * 63 + b"\n")
        os.fsync(fd)

    times, runs = [], []
    try:
        for _ in range(count):
            start = time.perf_counter()
            append()
            times.append(time.perf_counter() - start)
        for _ in range(4):
            start = time.perf_counter()
            for _ in range(n):
                append()
            runs.append((time.perf_counter() - start) / n)
    finally:
        os.close(fd)
        path.unlink()
    return statistics.median(times) * 1e6, min(runs[1:]) * 1e6


def worker(python: str, system: str, mode: str, n: int, directory: Path) -> tuple[int, str, float]:
    """Run one worker process; its exit status, last stdout line and wall time in ms."""
    start = time.perf_counter()
    done = subprocess.run(
        [python, str(HERE / WORKERS[system]), mode, str(n), str(directory)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "DBOS__APPVERSION": "peerbench"},
    )
    took = (time.perf_counter() - start) * 1000
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    if done.returncode not in (0, 137):
        raise SystemExit(f"{system} {mode} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return done.returncode, last, took


def print_whose(
    floors: tuple[float, float], step: float, run5: float, whose: dict[str, float]
) -> None:
    """What of hz's step and 5-step run is the kernel's (inside fsync), what is hz's (CPU,
    fsync stubbed out), and what is neither (waking after an fsync, waiting for a core)."""
    inside, cpu = whose["fsync_per_step_us"], whose["cpu_per_step_us"]
    print(
        f"  hz step, whose time: {inside:6.1f} us inside fsync ({inside / floors[0]:4.2f}x floor, "
        f"{inside / floors[1]:4.2f}x in a row), "
        f"{cpu:5.1f} us hz's CPU (fsync stubbed), {step - inside - cpu:5.1f} us neither"
    )
    inside, cpu = whose["five_fsync_run_us"] / 1000, whose["five_cpu_run_us"] / 1000
    print(
        f"  hz 5-step run, whose time: {inside:5.2f} ms inside fsync, {cpu:5.2f} ms hz's CPU "
        f"(fsync stubbed), {run5 / 1000 - inside - cpu:5.2f} ms neither"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--peers-python", required=True)
    args = parser.parse_args()
    n = int(os.environ.get("PEERS_N", "20"))
    rounds = int(os.environ.get("PEERS_ROUNDS", "3"))
    pythons = {"hz": sys.executable, "DBOS": args.peers_python, "LangGraph": args.peers_python}
    floors: list[float] = []
    in_a_row: list[float] = []
    """The floor measured as a step is (``fsync_floor_us``)."""
    step: dict[str, list[float]] = {system: [] for system in WORKERS}
    run5: dict[str, list[float]] = {system: [] for system in WORKERS}
    fsyncs: list[float] = []
    whose: dict[str, list[float]] = {}
    """hz's figures split into the kernel's and its own (the worker's keys)."""
    recovery: dict[str, list[float]] = {system: [] for system in WORKERS}
    with tempfile.TemporaryDirectory(dir=os.environ.get("PEERS_DIR")) as tmp:
        base = Path(tmp)
        for r in range(rounds):
            for system, python in pythons.items():
                single, row = fsync_floor_us(base, n)
                floors.append(single)
                in_a_row.append(row)
                _, line, _ = worker(python, system, "steps", n, base / f"{system}-steps-{r}")
                figures = json.loads(line)
                step[system].append(float(figures["per_step_us"]))
                if "fsyncs_per_step" in figures:
                    fsyncs.append(float(figures["fsyncs_per_step"]))
                for key in ("fsync_per_step_us", "cpu_per_step_us"):
                    if key in figures:
                        whose.setdefault(key, []).append(float(figures[key]))
                _, line, _ = worker(python, system, "steps", 5, base / f"{system}-five-{r}")
                five = json.loads(line)
                run5[system].append(float(five["run_us"]))
                for key in ("fsync_run_us", "cpu_run_us"):
                    if key in five:
                        whose.setdefault(f"five_{key}", []).append(float(five[key]))
                where = base / f"{system}-crash-{r}"
                status, _, _ = worker(python, system, "crash", n, where)
                if status != 137:
                    raise SystemExit(f"{system}: the crash run exited {status}, not 137")
                status, line, took = worker(python, system, "recover", n, where)
                if status != 0 or not json.loads(line).get("recovered"):
                    raise SystemExit(f"{system}: recovery did not finish the workflow")
                recovery[system].append(took)
    floor, row = statistics.median(floors), statistics.median(in_a_row)
    print(f"fsync floor (64-byte append + fsync, same disk): {floor:8.1f} us")
    print(f"  the same, {n} in a row, best of 3 as a step is measured: {row:8.1f} us")
    print(f"workflow of {n} durable steps, {rounds} rounds interleaved, medians:")
    hz_step, hz_recovery = statistics.median(step["hz"]), statistics.median(recovery["hz"])
    hz_run5 = statistics.median(run5["hz"])
    for system in WORKERS:
        per = statistics.median(step[system])
        rec = statistics.median(recovery[system])
        five = statistics.median(run5[system])
        print(
            f"  {system:10s} step {per:9.1f} us ({per / floor:5.2f}x floor, "
            f"{per / row:5.2f}x in a row, {per / hz_step:5.2f}x hz)   "
            f"5-step run {five / 1000:7.2f} ms "
            f"({five / hz_run5:5.2f}x hz)   crash recovery (whole process) {rec:8.1f} ms "
            f"({rec / hz_recovery:5.2f}x hz)"
        )
    if fsyncs:
        print(f"  hz fsyncs per durable step (counted): {statistics.median(fsyncs):.2f}")
    if len(whose) == 4:
        print_whose(
            (floor, row), hz_step, hz_run5, {k: statistics.median(v) for k, v in whose.items()}
        )
    sys.stdout.flush()
    if os.environ.get("PEERS_LISTING", "1") != "0":
        with tempfile.TemporaryDirectory(dir=os.environ.get("PEERS_DIR")) as tmp:
            for line in measure(Path(tmp), args.peers_python, rounds):
                print(line, flush=True)


if __name__ == "__main__":
    main()
