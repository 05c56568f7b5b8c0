"""``make bench-peers``: hz beside DBOS and LangGraph in their most durable modes on the
same workload, interleaved in one run, with the fsync floor of the same disk measured
between them.

The modes, each printed by name beside its figures (``MODES``): hz on both its paths,
its own turn host (``hz_worker.py``), a host embedding `machines` as
docs/embedding.md says (``embed_worker.py``) and the same on the Postgres journal
(``embed_pg_worker.py``, held against the peers on Postgres); DBOS on SQLite in WAL
mode and on Postgres; LangGraph with ``durability="sync"`` on ``SqliteSaver`` and on
``PostgresSaver``. The Postgres is a temporary cluster this bench makes, starts and
stops (``pg.py``); without ``initdb`` the Postgres rows are left out with the reason
printed. The peers' defaults (DBOS on SQLite's rollback journal, LangGraph's ``async``
durability) follow as labelled extras. For every mode, the fsyncs per durable step counted by strace
(``strace -f -c -e trace=fsync,fdatasync,msync,sync_file_range,sync,syncfs``): of one
workflow of N steps less one of none, each a whole worker process (start-up and
schema costs cancel); for a Postgres mode the server's too, every process of the cluster
traced (``-f`` on the postmaster, so the backend forked for the worker's connection
counts) while the worker runs.

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
a loaded machine). Each hz worker also measures its step beside the floor alike, in its
own process (`hz_worker.paired`): rep by rep, alternated, a turn's steps as the mean
period between its ``tool.result`` lines made durable and the floor as the mean period
of appends of the step's line size to a file in the spine's directory. Verdicts per hz
path on disk: ahead of every peer's durable mode, a step at most 1.3x that floor (the
ratios to the floor measured here between the workers printed beside it: another
process at another moment, on a disk whose floor moved 3x within minutes), and hz's CPU
per step at most a third of the floor. ``step_shape.py`` splits what a step asks of the
disk beyond the floor.

Then, with the cluster, jobs per second with 4 worker processes: hz's queue on Postgres
beside DBOS's (``jobs.py``; ``PEERS_JOBS`` jobs, 200 by default, ``0`` leaves it out).

Then listing 500 and 10,000 of them, for the three, as a whole process and in process
(``listing.py``; ``PEERS_LISTING=0`` leaves it out).

Usage: ``python tests/bench/peers/run.py --peers-python .bench-peers-venv/bin/python``
(hz runs with the Python that runs this script). ``PEERS_N`` and ``PEERS_ROUNDS`` set
the workflow size (default 20) and the rounds (default 3); ``PEERS_MODES`` a
comma-separated list of parts of mode names to run only those (the first is the one
the ratios are to).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from jobs import measure as measure_jobs
from listing import measure
from pg import Cluster, cluster, counted_fsyncs

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Mode:
    """One system in one configuration, named as the table prints it."""

    name: str
    worker: str
    env: dict[str, str] = field(default_factory=dict)
    postgres: bool = False
    extra: bool = False
    """A peer's default, weaker mode: printed, but not what hz is held against."""

    @property
    def hz(self) -> bool:
        return self.worker in ("hz_worker.py", "embed_worker.py", "embed_pg_worker.py")


MODES = (
    Mode("hz turn host", "hz_worker.py"),
    Mode("hz embedder (docs/embedding.md)", "embed_worker.py"),
    Mode("hz embedder on Postgres", "embed_pg_worker.py", postgres=True),
    Mode("DBOS SQLite WAL", "dbos_worker.py", {"PEERS_STORE": "sqlite-wal"}),
    Mode("DBOS Postgres", "dbos_worker.py", {"PEERS_STORE": "postgres"}, postgres=True),
    Mode(
        "LangGraph SqliteSaver sync",
        "langgraph_worker.py",
        {"PEERS_STORE": "sqlite", "PEERS_DURABILITY": "sync"},
    ),
    Mode(
        "LangGraph PostgresSaver sync",
        "langgraph_worker.py",
        {"PEERS_STORE": "postgres", "PEERS_DURABILITY": "sync"},
        postgres=True,
    ),
    Mode(
        "extra: DBOS SQLite rollback journal (default)",
        "dbos_worker.py",
        {"PEERS_STORE": "sqlite"},
        extra=True,
    ),
    Mode(
        "extra: LangGraph SqliteSaver async (default)",
        "langgraph_worker.py",
        {"PEERS_STORE": "sqlite", "PEERS_DURABILITY": "async"},
        extra=True,
    ),
)


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


class Runner:
    """Starts a mode's worker processes: its Python, its environment, and for a Postgres
    mode a database of its own per directory (made before the worker starts)."""

    def __init__(self, pythons: dict[bool, str], server: Cluster | None) -> None:
        self.pythons, self.server = pythons, server
        self.databases: set[str] = set()

    def command(self, mode: Mode, what: str, n: int, directory: Path) -> list[str]:
        return [self.pythons[mode.hz], str(HERE / mode.worker), what, str(n), str(directory)]

    def env(self, mode: Mode, directory: Path) -> dict[str, str]:
        env = {**os.environ, "DBOS__APPVERSION": "peerbench", **mode.env}
        if mode.postgres:
            assert self.server is not None
            database = re.sub(r"[^a-z0-9]+", "_", directory.name.lower())
            if database not in self.databases:
                self.server.createdb(database)
                self.databases.add(database)
            env["PEERS_PG_URL"] = self.server.url(database)
        return env

    def run(self, mode: Mode, what: str, n: int, directory: Path) -> tuple[int, str, float]:
        """Run one worker process; its exit status, last stdout line and wall time in ms."""
        env = self.env(mode, directory)
        start = time.perf_counter()
        done = subprocess.run(
            self.command(mode, what, n, directory),
            capture_output=True,
            text=True,
            check=False,
            env=env,
        )
        took = (time.perf_counter() - start) * 1000
        last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
        if done.returncode not in (0, 137):
            raise SystemExit(
                f"{mode.name} {what} failed ({done.returncode}):\n{done.stderr[-2000:]}"
            )
        return done.returncode, last, took

    def fsyncs_per_step(self, mode: Mode, n: int, base: Path) -> tuple[float, float]:
        """The worker's and the server's fsyncs per step by strace: a workflow of ``n``
        steps less one of none, each a whole process on a store of its own."""
        counts = []
        for steps in (n, 0):
            directory = base / f"strace-{steps}"
            directory.mkdir(parents=True)
            env = self.env(mode, directory)
            counts.append(
                counted_fsyncs(
                    self.command(mode, "once", steps, directory),
                    env,
                    self.server if mode.postgres else None,
                    directory,
                )
            )
        (own, server), (own0, server0) = counts
        return (own - own0) / n, (server - server0) / n


def print_whose(
    name: str, floors: tuple[float, float], step: float, run5: float, whose: dict[str, float]
) -> None:
    """What of an hz path's step and 5-step run is the kernel's (inside fsync), what is
    hz's (CPU, fsync stubbed out), and what is neither (waking, waiting for a core)."""
    inside, cpu = whose["fsync_per_step_us"], whose["cpu_per_step_us"]
    print(
        f"  {name} step, whose time: {inside:6.1f} us inside fsync "
        f"({inside / floors[0]:4.2f}x floor, {inside / floors[1]:4.2f}x in a row), "
        f"{cpu:5.1f} us hz's CPU (fsync stubbed), {step - inside - cpu:5.1f} us neither"
    )
    inside, cpu = whose["five_fsync_run_us"] / 1000, whose["five_cpu_run_us"] / 1000
    print(
        f"  {name} 5-step run, whose time: {inside:5.2f} ms inside fsync, {cpu:5.2f} ms "
        f"hz's CPU (fsync stubbed), {run5 / 1000 - inside - cpu:5.2f} ms neither"
    )


def verdicts(modes: list[Mode], figures: dict[str, dict[str, float]]) -> list[str]:
    """PASS/MISS per hz path and figure: hz ahead of every peer's most durable mode
    measured (the extras aside), as the hz path's time over the fastest such peer's; hz
    on Postgres against the peers on Postgres only."""
    lines = []
    peers = [m for m in modes if not m.hz and not m.extra]
    for path in (m for m in modes if m.hz):
        pool = [m for m in peers if m.postgres] if path.postgres else peers
        if not pool:
            continue
        for key, what in (("step", "step"), ("run5", "5-step run"), ("recovery", "recovery")):
            best = min(pool, key=lambda m: figures[m.name][key])
            ratio = figures[path.name][key] / figures[best.name][key]
            verdict = "PASS" if ratio < 1 else "MISS"
            lines.append(
                f"{verdict} {path.name} ahead of the peers' durable modes on the {what}: "
                f"{ratio:.2f}x the fastest, {best.name} (target < 1.00x)"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--peers-python", required=True)
    args = parser.parse_args()
    n = int(os.environ.get("PEERS_N", "20"))
    rounds = int(os.environ.get("PEERS_ROUNDS", "3"))
    pythons = {True: sys.executable, False: args.peers_python}
    with cluster(os.environ.get("PEERS_DIR")) as server:
        if isinstance(server, str):
            print(f"Postgres rows left out: {server}", flush=True)
            modes = [m for m in MODES if not m.postgres]
            server = None
        else:
            modes = list(MODES)
        chosen = os.environ.get("PEERS_MODES")
        if chosen:
            modes = [m for m in modes if any(c in m.name for c in chosen.split(","))]
        if shutil.which("strace") is None:
            print("fsyncs by strace left out: strace is not on PATH", flush=True)
        bench(Runner(pythons, server), modes, n, rounds)
        if server is not None and os.environ.get("PEERS_JOBS", "200") != "0":
            for line in measure_jobs(server, sys.executable, args.peers_python, rounds):
                print(line, flush=True)
    if os.environ.get("PEERS_LISTING", "1") != "0":
        with tempfile.TemporaryDirectory(dir=os.environ.get("PEERS_DIR")) as tmp:
            for line in measure(Path(tmp), args.peers_python, rounds):
                print(line, flush=True)


def bench(runner: Runner, modes: list[Mode], n: int, rounds: int) -> None:
    floors: list[float] = []
    in_a_row: list[float] = []
    """The floor measured as a step is (``fsync_floor_us``)."""
    step: dict[str, list[float]] = {m.name: [] for m in modes}
    run5: dict[str, list[float]] = {m.name: [] for m in modes}
    recovery: dict[str, list[float]] = {m.name: [] for m in modes}
    counted: dict[str, list[float]] = {}
    """hz's fsyncs per step as its workers count them (``os.fsync`` wrapped)."""
    whose: dict[str, dict[str, list[float]]] = {}
    """hz's figures split into the kernel's and its own (the workers' keys)."""
    with tempfile.TemporaryDirectory(dir=os.environ.get("PEERS_DIR")) as tmp:
        base = Path(tmp)
        for r in range(rounds):
            for i, mode in enumerate(modes):
                single, row = fsync_floor_us(base, n)
                floors.append(single)
                in_a_row.append(row)
                _, line, _ = runner.run(mode, "steps", n, base / f"m{i}-steps-{r}")
                figures = json.loads(line)
                step[mode.name].append(float(figures["per_step_us"]))
                if "fsyncs_per_step" in figures:
                    counted.setdefault(mode.name, []).append(float(figures["fsyncs_per_step"]))
                for key in (
                    "fsync_per_step_us",
                    "cpu_per_step_us",
                    "paired_step_us",
                    "paired_floor_us",
                    "paired_ratio",
                ):
                    if key in figures:
                        whose.setdefault(mode.name, {}).setdefault(key, []).append(
                            float(figures[key])
                        )
                _, line, _ = runner.run(mode, "steps", 5, base / f"m{i}-five-{r}")
                five = json.loads(line)
                run5[mode.name].append(float(five["run_us"]))
                for key in ("fsync_run_us", "cpu_run_us"):
                    if key in five:
                        whose.setdefault(mode.name, {}).setdefault(f"five_{key}", []).append(
                            float(five[key])
                        )
                where = base / f"m{i}-crash-{r}"
                status, _, _ = runner.run(mode, "crash", n, where)
                if status != 137:
                    raise SystemExit(f"{mode.name}: the crash run exited {status}, not 137")
                status, line, took = runner.run(mode, "recover", n, where)
                if status != 0 or not json.loads(line).get("recovered"):
                    raise SystemExit(f"{mode.name}: recovery did not finish the workflow")
                recovery[mode.name].append(took)
        by_strace = {}
        if shutil.which("strace"):
            for i, mode in enumerate(modes):
                by_strace[mode.name] = runner.fsyncs_per_step(mode, n, base / f"m{i}-strace")
    floor, row = statistics.median(floors), statistics.median(in_a_row)
    print(f"fsync floor (64-byte append + fsync, same disk): {floor:8.1f} us")
    print(f"  the same, {n} in a row, best of 3 as a step is measured: {row:8.1f} us")
    print(
        f"workflow of {n} durable steps, {rounds} rounds interleaved, medians; "
        "each figure beside its ratio to hz's turn host"
    )
    medians = {
        m.name: {
            "step": statistics.median(step[m.name]),
            "run5": statistics.median(run5[m.name]),
            "recovery": statistics.median(recovery[m.name]),
        }
        for m in modes
    }
    hz = medians[modes[0].name]
    width = max(len(m.name) for m in modes)
    for mode in modes:
        per, five, rec = (medians[mode.name][k] for k in ("step", "run5", "recovery"))
        fsyncs = ""
        if mode.name in by_strace:
            own, server = by_strace[mode.name]
            fsyncs = f"   fsyncs/step (strace) {own + server:5.2f}"
            if mode.postgres:
                fsyncs += f" ({own:.2f} worker + {server:.2f} server)"
        print(
            f"  {mode.name:{width}s}  step {per:8.1f} us ({per / floor:5.2f}x floor, "
            f"{per / row:5.2f}x in a row, {per / hz['step']:5.2f}x hz)   "
            f"5-step run {five / 1000:7.2f} ms ({five / hz['run5']:5.2f}x hz)   "
            f"crash recovery (whole process) {rec:8.1f} ms ({rec / hz['recovery']:5.2f}x hz)"
            f"{fsyncs}"
        )
    for name, values in counted.items():
        print(
            f"  {name} fsyncs per durable step (os.fsync counted): {statistics.median(values):.2f}"
        )
    for name, keys in whose.items():
        if "paired_ratio" in keys:
            print(
                f"  {name} step beside the floor measured alike in its own process "
                f"(alternated, same directory, the step's line size): step "
                f"{statistics.median(keys['paired_step_us']):8.1f} us, floor "
                f"{statistics.median(keys['paired_floor_us']):8.1f} us, "
                f"{statistics.median(keys['paired_ratio']):4.2f}x"
            )
        if {"fsync_per_step_us", "cpu_per_step_us", "five_fsync_run_us", "five_cpu_run_us"} <= set(
            keys
        ):
            print_whose(
                name,
                (floor, row),
                medians[name]["step"],
                medians[name]["run5"],
                {k: statistics.median(v) for k, v in keys.items()},
            )
    lines = verdicts(modes, medians)
    lines += floor_verdicts(
        modes,
        medians,
        (floor, row),
        {
            name: statistics.median(keys["cpu_per_step_us"])
            for name, keys in whose.items()
            if "cpu_per_step_us" in keys
        },
        {
            name: statistics.median(keys["paired_ratio"])
            for name, keys in whose.items()
            if "paired_ratio" in keys
        },
    )
    for line in lines:
        print(line)
    sys.stdout.flush()


FLOOR_TARGET = 1.3
"""Issue 42 item 5: a durable step at most this many times the fsync floor."""


def floor_verdicts(
    modes: list[Mode],
    medians: dict[str, dict[str, float]],
    floors: tuple[float, float],
    cpu: dict[str, float],
    paired: dict[str, float],
) -> list[str]:
    """PASS/MISS per hz path (Postgres aside: its floor is the server's): the step at most
    `FLOOR_TARGET` times the floor measured alike in the worker's own process (``paired``:
    the median over rounds of the per-rep ratio, `hz_worker.paired`), beside the ratio to
    the floor this script measures between the workers (N appends in a row, and the
    median single append); and hz's CPU per step (fsync stubbed) at most a third of the
    floor in a row."""
    single, row = floors
    lines = []
    for path in (m for m in modes if m.hz and not m.postgres):
        step = medians[path.name]["step"]
        beside = f"{step / row:.2f}x the floor in a row, {step / single:.2f}x the median single"
        if path.name in paired:
            ratio = paired[path.name]
            verdict = "PASS" if ratio <= FLOOR_TARGET else "MISS"
            lines.append(
                f"{verdict} {path.name} step at most {FLOOR_TARGET}x the fsync floor: "
                f"{ratio:.2f}x the floor measured alike in its process ({beside} append "
                f"measured between the workers) (target {FLOOR_TARGET:.2f}x)"
            )
        if path.name in cpu:
            own = cpu[path.name]
            verdict = "PASS" if own <= row / 3 else "MISS"
            lines.append(
                f"{verdict} {path.name} CPU per step at most a third of the floor: "
                f"{own:.1f} us, {own / row:.2f}x the floor in a row (target 0.33x)"
            )
    return lines


if __name__ == "__main__":
    main()
