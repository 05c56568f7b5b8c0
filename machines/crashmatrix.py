"""The crash matrix: kill a real process at every durable boundary of a scenario.

A *scenario* is a module-level async function ``scenario(rig) -> TurnState | None``
that builds a journal, steps and a fake world from its `Rig` and starts or resumes
its turn (`Rig.run` applies the key rule). `run_matrix`:

1. runs the scenario once cleanly in a subprocess and counts its boundaries:
   every spine append, and every write of the fake world;
2. for each boundary, runs it in a fresh directory in a subprocess that
   ``os._exit(137)``s there (``HZ_CRASH_AT=append:<n>``, or the world's own
   ``HZ_MATRIX_WORLD_CRASH=<n>`` right after its n-th write), then resumes it in
   fresh processes until the turn is final (at most ``max_resumes + 1`` times);
3. asserts, per boundary: each world effect happened exactly once per key, the
   spend equals the clean run's (never doubled), an unsafe tool ran at most once,
   the chain verifies, and the clean run's final disposition is reached.

Then one *crash loop*: a turn that dies at the first append of every resume must end
abandoned ``max-resumes``. A host runs it over its own scenario from the command
line: ``python -m machines.crashmatrix my_host:scenario`` (`main`; exit 1 when a
boundary broke a promise). Failures are collected in the `MatrixReport`; the
scenario functions shipped in `machines.scenarios` include a deliberately unsafe one.
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
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ledger.event import parse_ts
from ledger.spine import Spine, verify
from machines.crash import CRASH_EXIT, crash_hook
from machines.disk_body import DiskBody
from machines.effects import Presence
from machines.errors import MachineError
from machines.fold import TurnState, fold
from machines.journal import Journal
from machines.keys import Wake, coalesce
from machines.loading import loading
from machines.resume import Pins, resume_turn, start_turn
from machines.runner import Settings
from machines.spine_journal import SpineIndex, SpineJournal
from machines.steps import Steps

WORLD_CRASH = "HZ_MATRIX_WORLD_CRASH"
MACHINE_ERROR_EXIT = 3


def _append_line(path: Path, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (line + "\n").encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


class FileWorld:
    """A fake world kept in a file: one line per effect performed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.crash_at = int(os.environ.get(WORLD_CRASH, "0") or 0)
        self.writes = 0

    async def perform(self, key: str) -> dict[str, str]:
        """Write the effect (durably), then die here if this write is the crash point."""
        _append_line(self.path, key)
        self.wrote()
        return {"placed": key}

    def wrote(self) -> None:
        """Count one durable write of the world; die if it is the crash point (a host's
        own world calls this after each of its writes to ``path``)."""
        self.writes += 1
        if self.writes == self.crash_at:
            os._exit(CRASH_EXIT)

    async def probe(self, key: str) -> Presence:
        """Present when the key was written."""
        return "present" if self.has(key) else "absent"

    def has(self, key: str) -> bool:
        """The same question as a local record answers it."""
        return key in _lines(self.path)


class Rig:
    """What a scenario gets in its process: a spine, a body, a world, spend and tools."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        now = os.environ.get("HZ_NOW")
        moment = parse_ts(now) if now else datetime(2026, 10, 30, 15, 0, tzinfo=UTC)
        self.clock = lambda: moment
        self.body = DiskBody(workdir / "spine")
        self.world = FileWorld(workdir / "world.log")
        self.settings = Settings(clock=self.clock, sleep=_no_sleep)
        self._spine: Spine | None = None

    def journal(self) -> SpineJournal:
        """The spine in ``workdir/spine``, with the crash hook installed."""
        spine = Spine.open(self.workdir / "spine", clock=self.clock, on_durable=[crash_hook()])
        self._spine = spine
        return SpineJournal(spine, SpineIndex.scan(spine.path))

    def charge(self, usd: float) -> None:
        """Record a model request's cost in the spend file."""
        _append_line(self.workdir / "spend.log", f"{usd}")

    def tool_ran(self, name: str) -> None:
        """Record a tool run in the tools file."""
        _append_line(self.workdir / "tools.log", name)

    async def run(
        self,
        journal: Journal,
        steps: Steps,
        *,
        turn: str,
        wakes: Sequence[Wake],
        pins: Pins,
        settings: Settings | None = None,
    ) -> TurnState:
        """Start the turn, or resume it, or leave it, as the key rule says
        (``settings``: the host's, e.g. with its vocabulary; the rig's by default)."""
        settings = settings or self.settings
        plan = coalesce(journal, wakes)
        if plan.resume:
            return await resume_turn(journal, self.body, steps, settings, turn=plan.resume[0])
        if plan.start:
            return await start_turn(
                journal, self.body, steps, settings, turn=turn, wakes=plan.start, pins=pins
            )
        return fold(turn, journal.turn_events(turn), settings.vocabulary)


async def _no_sleep(_seconds: float) -> None:
    """The rig never waits between retries."""


Scenario = Callable[[Rig], Coroutine[Any, Any, TurnState | None]]


def _child(target: str, workdir: Path) -> int:
    module, _, name = target.partition(":")
    # its module (a host's agent library, often large) loads with the collector paused,
    # then frozen, so no collection walks it again
    with loading():
        scenario: Scenario = getattr(importlib.import_module(module), name)
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
    (workdir / "outcome.json").write_text(json.dumps(outcome), encoding="utf-8")
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
        for key in _lines(workdir / "world.log"):
            counts[key] = counts.get(key, 0) + 1
        tools: dict[str, int] = {}
        for name in _lines(workdir / "tools.log"):
            tools[name] = tools.get(name, 0) + 1
        spine = workdir / "spine" / "session.jsonl"
        return cls(
            outcome=outcome,
            world=counts,
            spend=round(sum(float(x) for x in _lines(workdir / "spend.log")), 6),
            tools=tools,
            appends=len(_lines(spine)),
            chain_ok=verify(spine).ok,
        )


@dataclass
class MatrixReport:
    """What the matrix found: boundaries tried, subprocesses run, and every failure."""

    scenario: str
    boundaries: list[str] = field(default_factory=list)
    runs: int = 0
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no boundary broke a promise."""
        return not self.failures


class _Runner:
    def __init__(self, scenario: str, report: MatrixReport) -> None:
        self.scenario = scenario
        self.report = report

    def run(self, workdir: Path, crash: dict[str, str] | None = None) -> int:
        env = {k: v for k, v in os.environ.items() if k not in ("HZ_CRASH_AT", WORLD_CRASH)}
        env.update(crash or {})
        workdir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.report.runs += 1
        done = subprocess.run(
            [sys.executable, "-m", "machines.crashmatrix", "--child", self.scenario, str(workdir)],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode not in (0, CRASH_EXIT, MACHINE_ERROR_EXIT):
            self.report.failures.append(f"{workdir.name}: exit {done.returncode}: {done.stderr}")
        return done.returncode


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
) -> MatrixReport:
    """Run the matrix for ``scenario`` (``"module:function"``) under ``root``.

    ``select`` limits it to the named boundaries (``world-1``, ``append-5``, ...).
    """
    report = MatrixReport(scenario)
    runner = _Runner(scenario, report)
    if runner.run(root / "clean") != 0:
        report.failures.append(f"clean run failed: {report.failures}")
        return report
    clean = Observed.read(root / "clean")
    writes = sum(clean.world.values())
    boundaries = [(WORLD_CRASH, n) for n in range(1, writes + 1)]
    boundaries += [("HZ_CRASH_AT", n) for n in range(1, clean.appends + 1)]
    for variable, n in boundaries:
        name = f"{'world' if variable == WORLD_CRASH else 'append'}-{n}"
        if select is not None and name not in select:
            continue
        report.boundaries.append(name)
        workdir = root / name
        value = str(n) if variable == WORLD_CRASH else f"append:{n}"
        if runner.run(workdir, {variable: value}) != CRASH_EXIT:
            report.failures.append(f"{name}: the process did not die at its crash point")
            continue
        for _ in range(max_resumes + 1):
            if runner.run(workdir) == 0:
                break
        report.failures.extend(_compare(name, clean, Observed.read(workdir), unsafe_tools))
        if stop_at_first_failure and report.failures:
            return report
    if crash_loop:
        _crash_loop(runner, root / "loop", clean.appends, max_resumes)
    return report


def _crash_loop(runner: _Runner, workdir: Path, appends: int, max_resumes: int) -> None:
    runner.run(workdir, {"HZ_CRASH_AT": f"append:{max(1, appends // 2)}"})
    for _ in range(max_resumes):
        runner.run(workdir, {"HZ_CRASH_AT": "append:1"})
    runner.run(workdir)
    outcome = Observed.read(workdir).outcome
    if (outcome.get("state"), outcome.get("reason")) != ("abandoned", "max-resumes"):
        runner.report.failures.append(f"crash loop: ended {outcome}, expected max-resumes")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m machines.crashmatrix my_host:scenario [--root DIR]``: run the
    matrix over a host's scenario, print what it found; exit 0 when no boundary
    broke a promise, 1 otherwise."""
    parser = argparse.ArgumentParser(
        prog="python -m machines.crashmatrix",
        description="Kill a real process at every durable boundary of a scenario.",
    )
    parser.add_argument("scenario", help="module:function, an async scenario(rig)")
    parser.add_argument("--root", type=Path, help="where the runs go (default: a temp dir)")
    parser.add_argument("--max-resumes", type=int, default=3)
    parser.add_argument("--unsafe-tool", action="append", default=None, dest="unsafe")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("workdir", nargs="?", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _child(args.scenario, args.workdir)
    module, _, name = args.scenario.partition(":")
    try:
        getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError) as error:
        refused = MachineError(
            "HZM065",
            f"cannot load the scenario {args.scenario!r}: {error}",
            "name an importable module and its async scenario function, module:function",
        )
        sys.stderr.write(refused.render() + "\n")
        return 1
    with tempfile.TemporaryDirectory(prefix="crashmatrix-") as scratch:
        root = args.root or Path(scratch)
        report = run_matrix(
            args.scenario,
            root,
            max_resumes=args.max_resumes,
            unsafe_tools=args.unsafe or ("handoff",),
        )
    print(
        f"{report.scenario}: {len(report.boundaries)} boundaries, {report.runs} runs, "
        f"{len(report.failures)} failures"
    )
    for line in report.failures:
        print(f"  {line}")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
