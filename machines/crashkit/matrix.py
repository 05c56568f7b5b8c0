"""The crash matrix: kill a real process at every durable boundary of a scenario.

A *scenario* is a module-level async function ``scenario(rig) -> TurnState | None``
that builds a journal, steps and a fake world from its `Rig` (`machines.crashkit.rig`)
and starts or resumes its turn (`Rig.run` applies the key rule). `run_matrix`:

1. runs the scenario once cleanly in a process of its own and counts its boundaries:
   every spine append, and every write of the fake world;
2. for each boundary, runs it in a fresh directory in a process that
   ``os._exit(137)``s there (``HZ_CRASH_AT=append:<n>``, or the world's own
   ``HZ_MATRIX_WORLD_CRASH=<n>`` right after its n-th write), then resumes it in
   fresh processes until the turn is final (at most ``max_resumes + 1`` times);
3. asserts, per boundary: each world effect happened exactly once per key, the
   spend equals the clean run's (never doubled), an unsafe tool ran at most once,
   the chain verifies, and the clean run's final disposition is reached.

Then one *crash loop*: a turn that dies at the first append of every resume must end
abandoned ``max-resumes``. Every run is a real process killed for real, and all that
the next run sees comes from the files the last one left: by default a child forked
from a parent that imported the scenario's module once and never runs it itself
(``--spawn``: a fresh interpreter per run; `machines.crashkit.runs` says how each way
starts and why a fork is as pristine). ``jobs`` runs that many boundaries at once,
each in its own directory. A host runs it over its own scenario from the command
line: ``python -m machines.crashkit.matrix my_host:scenario`` (`main`; exit 1 when a
boundary broke a promise). Failures are collected in the `MatrixReport`; the
scenario functions shipped in `machines.crashkit.scenarios` include a deliberately unsafe one.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from ledger.files import write_atomic
from ledger.spine import verify
from machines.crashkit.crash import CRASH_EXIT
from machines.crashkit.rig import WORLD_CRASH, FileWorld, Rig, Scenario, lines_of
from machines.crashkit.runs import Exit, Job, Run, Started, drive, forked, spawned, threads
from machines.errors import MachineError
from machines.loading import loading

__all__ = [
    "WORLD_CRASH",
    "FileWorld",
    "MatrixReport",
    "Observed",
    "Options",
    "Rig",
    "Scenario",
    "main",
    "matrix",
    "run_matrix",
]

MACHINE_ERROR_EXIT = 3
"""A run's exit status when the scenario ended with a coded `MachineError`."""


def _load(target: str) -> Scenario:
    module, _, name = target.partition(":")
    if not module or not name:
        raise ValueError(f"{target!r} names no function: write module:function")
    # its module (a host's agent library, often large) loads with the collector paused,
    # then frozen, so no collection walks it again (nor copies it in a forked child)
    with loading():
        scenario: Scenario = getattr(importlib.import_module(module), name)
    return scenario


def _play(scenario: Scenario, workdir: Path) -> int:
    """One run, in its own process: the scenario on a fresh event loop, its outcome written."""
    try:
        state = asyncio.run(scenario(Rig(workdir)))
    except MachineError as error:
        sys.stderr.write(error.render() + "\n")
        return MACHINE_ERROR_EXIT
    outcome = {
        "state": state.state if state else None,
        "disposition": state.disposition if state else None,
        "reason": state.reason if state else None,
    }
    write_atomic(workdir / "outcome.json", json.dumps(outcome).encode("utf-8"))
    return 0


@dataclass
class Observed:
    """What one directory holds after a run: outcome, world, spend, tools, chain."""

    outcome: dict[str, Any]
    world: dict[str, int]
    spend: float
    tools: dict[str, int]
    appends: int
    chain_ok: bool

    @classmethod
    def read(cls, workdir: Path) -> Observed:
        """Read the files a scenario leaves behind."""
        outcome_path = workdir / "outcome.json"
        outcome = json.loads(outcome_path.read_text()) if outcome_path.exists() else {}
        counts: dict[str, int] = {}
        for key in lines_of(workdir / "world.log"):
            counts[key] = counts.get(key, 0) + 1
        tools: dict[str, int] = {}
        for name in lines_of(workdir / "tools.log"):
            tools[name] = tools.get(name, 0) + 1
        spine = workdir / "spine" / "session.jsonl"
        return cls(
            outcome=outcome,
            world=counts,
            spend=round(sum(float(x) for x in lines_of(workdir / "spend.log")), 6),
            tools=tools,
            appends=len(lines_of(spine)),
            chain_ok=verify(spine).ok,
        )


@dataclass
class MatrixReport:
    """What the matrix found: boundaries tried, processes run (``mode``: each one forked
    from a parent that imported the scenario once, or spawned afresh), every failure."""

    scenario: str
    boundaries: list[str] = field(default_factory=list)
    runs: int = 0
    failures: list[str] = field(default_factory=list)
    mode: str = "fork"

    @property
    def ok(self) -> bool:
        """True when no boundary broke a promise."""
        return not self.failures


@dataclass(frozen=True)
class Options:
    """How to run a matrix (`run_matrix`'s keywords), as its parent process is given them."""

    max_resumes: int = 3
    unsafe_tools: tuple[str, ...] = ("handoff",)
    stop_at_first_failure: bool = False
    crash_loop: bool = True
    select: tuple[str, ...] | None = None
    jobs: int = 1


def _compare(name: str, clean: Observed, seen: Observed, unsafe_tools: Sequence[str]) -> list[str]:
    problems = []
    doubled = {k: n for k, n in seen.world.items() if n != 1}
    if doubled or set(seen.world) != set(clean.world):
        problems.append(f"{name}: world effects {seen.world}, expected once each of {clean.world}")
    if seen.spend != clean.spend:
        problems.append(f"{name}: spend {seen.spend}, clean run spent {clean.spend}")
    for tool in unsafe_tools:
        if seen.tools.get(tool, 0) > 1:
            problems.append(f"{name}: unsafe tool {tool} ran {seen.tools[tool]} times")
    if not seen.chain_ok:
        problems.append(f"{name}: the chain does not verify")
    if seen.outcome.get("disposition") != clean.outcome.get("disposition"):
        problems.append(f"{name}: ended {seen.outcome}, clean run ended {clean.outcome}")
    return problems


def run_matrix(
    scenario: str,
    root: Path,
    *,
    max_resumes: int = 3,
    unsafe_tools: Sequence[str] = ("handoff",),
    stop_at_first_failure: bool = False,
    crash_loop: bool = True,
    select: Sequence[str] | None = None,
    spawn: bool = False,
    jobs: int = 1,
) -> MatrixReport:
    """Run the matrix for ``scenario`` (``"module:function"``) under ``root``.

    ``select`` limits it to the named boundaries (``world-1``, ``append-5``, ...);
    ``jobs`` runs that many boundaries at once. The runs are forked from a fresh parent
    process (``python -m machines.crashkit.matrix``) that imports the scenario's module once,
    so nothing of the caller's process reaches them; with ``spawn`` (and where there is
    no ``os.fork``) each run is a fresh interpreter started from here.
    """
    options = Options(
        max_resumes,
        tuple(unsafe_tools),
        stop_at_first_failure,
        crash_loop,
        None if select is None else tuple(select),
        jobs,
    )
    if spawn or not hasattr(os, "fork"):
        return matrix(scenario, root, options, spawned(scenario), "spawn")
    parent = [sys.executable, "-m", "machines.crashkit.matrix", scenario, "--root", str(root)]
    done = subprocess.run(
        [*parent, "--parent", json.dumps(asdict(options))],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        failure = f"the matrix's parent process failed: exit {done.returncode}: {done.stderr}"
        return MatrixReport(scenario, failures=[failure])
    return MatrixReport(**json.loads(done.stdout.splitlines()[-1]))  # the last line


def matrix(
    scenario: str, root: Path, options: Options, start: Callable[[Run], Started], mode: str
) -> MatrixReport:
    """The matrix from this process, every run a process ``start`` starts (this process
    runs no scenario itself and opens no spine: it reads what the runs leave)."""
    report = MatrixReport(scenario, mode=mode)

    def counted(run: Run) -> Started:
        report.runs += 1
        return start(run)

    [failures] = drive([_clean(root / "clean")], counted)
    if failures:
        report.failures.extend(failures)
        return report
    jobs = _jobs(report, root, Observed.read(root / "clean"), options)
    at_once, stop = options.jobs, options.stop_at_first_failure
    for found in drive(jobs, counted, at_once=at_once, stop_at_first_failure=stop):
        report.failures.extend(found)
    return report


def _status(name: str, ended: Exit, failures: list[str]) -> int:
    if ended.status not in (0, CRASH_EXIT, MACHINE_ERROR_EXIT):
        failures.append(f"{name}: exit {ended.status}: {ended.stderr}")
    return ended.status


CLEAN_ENDS = ("finished", "skipped", "waiting")
"""How a clean run may end: a matrix compares every crashed run with it, so a clean run
that is abandoned or failed (or never returns a turn) fails the matrix."""


def _clean(workdir: Path) -> Job:
    failures: list[str] = []
    if _status(workdir.name, (yield Run(workdir)), failures) != 0:
        failures.append(f"clean run failed: {failures}")
        return failures
    outcome = Observed.read(workdir).outcome
    if outcome.get("state") not in CLEAN_ENDS:
        why = f" ({outcome['reason']})" if outcome.get("reason") else ""
        failures.append(
            f"clean run did not finish: it ended {outcome.get('state')}{why}; every crashed "
            "run is compared with a clean run that finishes, waits or skips: fix the scenario"
        )
    return failures


def _jobs(report: MatrixReport, root: Path, clean: Observed, options: Options) -> Iterator[Job]:
    writes = sum(clean.world.values())
    boundaries = [(WORLD_CRASH, n) for n in range(1, writes + 1)]
    boundaries += [("HZ_CRASH_AT", n) for n in range(1, clean.appends + 1)]
    for variable, n in boundaries:
        name = f"{'world' if variable == WORLD_CRASH else 'append'}-{n}"
        if options.select is not None and name not in options.select:
            continue
        value = str(n) if variable == WORLD_CRASH else f"append:{n}"
        yield _boundary(report, root / name, {variable: value}, clean, options)
    if options.crash_loop:
        yield _crash_loop(root / "loop", clean.appends, options.max_resumes)


def _boundary(
    report: MatrixReport, workdir: Path, crash: dict[str, str], clean: Observed, options: Options
) -> Job:
    name = workdir.name
    report.boundaries.append(name)
    failures: list[str] = []
    if _status(name, (yield Run(workdir, crash)), failures) != CRASH_EXIT:
        failures.append(f"{name}: the process did not die at its crash point")
        return failures
    for _ in range(options.max_resumes + 1):
        if _status(name, (yield Run(workdir)), failures) == 0:
            break
    failures.extend(_compare(name, clean, Observed.read(workdir), options.unsafe_tools))
    return failures


def _crash_loop(workdir: Path, appends: int, max_resumes: int) -> Job:
    failures: list[str] = []
    crash = {"HZ_CRASH_AT": f"append:{max(1, appends // 2)}"}
    _status("loop", (yield Run(workdir, crash)), failures)
    for _ in range(max_resumes):
        _status("loop", (yield Run(workdir, {"HZ_CRASH_AT": "append:1"})), failures)
    _status("loop", (yield Run(workdir)), failures)
    outcome = Observed.read(workdir).outcome
    if (outcome.get("state"), outcome.get("reason")) != ("abandoned", "max-resumes"):
        failures.append(f"crash loop: ended {outcome}, expected max-resumes")
    return failures


def _refused(code: str, message: str, hint: str) -> int:
    sys.stderr.write(MachineError(code, message, hint).render() + "\n")
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m machines.crashkit.matrix my_host:scenario [--root DIR] [--spawn] [--jobs N]``:
    run the matrix over a host's scenario, print what it found; exit 0 when no boundary
    broke a promise, 1 otherwise."""
    parser = argparse.ArgumentParser(
        prog="python -m machines.crashkit.matrix",
        description="Kill a real process at every durable boundary of a scenario.",
    )
    parser.add_argument("scenario", help="module:function, an async scenario(rig)")
    parser.add_argument("--root", type=Path, help="where the runs go (default: a temp dir)")
    parser.add_argument(
        "--max-resumes", type=int, default=3, help="resumes before a turn is abandoned (3)"
    )
    parser.add_argument(
        "--unsafe-tool",
        action="append",
        default=None,
        dest="unsafe",
        metavar="TOOL",
        help="a tool that is not replay-safe and must run at most once (repeatable; handoff)",
    )
    parser.add_argument(
        "--spawn", action="store_true", help="start each run as a fresh interpreter, not a fork"
    )
    parser.add_argument("--jobs", type=int, default=1, help="boundaries run at once (1)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--parent", help=argparse.SUPPRESS)
    parser.add_argument("workdir", nargs="?", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _play(_load(args.scenario), args.workdir)
    if args.jobs < 1:
        return _refused(
            "HZM066", f"--jobs {args.jobs} runs nothing", "give --jobs 1 or more (1: one at a time)"
        )
    try:
        scenario = _load(args.scenario)
    except (ImportError, AttributeError, ValueError) as error:
        return _refused(
            "HZM065",
            f"cannot load the scenario {args.scenario!r}: {error}",
            "name an importable module and its async scenario function, module:function",
        )
    options = Options(args.max_resumes, tuple(args.unsafe or ("handoff",)), jobs=args.jobs)
    if args.parent:
        options = Options(**json.loads(args.parent))
    spawn = args.spawn or not hasattr(os, "fork")
    if not spawn and threads() > 1:
        spawn = True
        sys.stderr.write(
            "note: loading the scenario started a thread, and a process with threads is "
            "not forked: each run is a fresh interpreter (as with --spawn)\n"
        )
    start = spawned(args.scenario) if spawn else forked(partial(_play, scenario))
    with tempfile.TemporaryDirectory(prefix="crashmatrix-") as scratch:
        root = args.root or Path(scratch)
        report = matrix(args.scenario, root, options, start, "spawn" if spawn else "fork")
    if args.parent:
        print(json.dumps(asdict(report)))
        return 0
    print(
        f"{report.scenario}: {len(report.boundaries)} boundaries, {report.runs} runs "
        f"({report.mode}), {len(report.failures)} failures"
    )
    for line in report.failures:
        print(f"  {line}")
    return 0 if report.ok else 1


if __name__ == "__main__":
    # the module the scenarios import (`Rig`), not a second copy of it as __main__
    from machines.crashkit.matrix import main as _main

    sys.exit(_main())
