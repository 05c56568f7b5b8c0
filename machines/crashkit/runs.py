"""The crash matrix's runs: each one a real process, killed for real at its crash point.

Two ways to start a run. *Fork* (`forked`, the default on POSIX): the matrix's parent
process has imported the scenario's module once; each run is an ``os.fork`` of it whose
child sets its crash variables in ``os.environ``, runs the scenario on a fresh event
loop, writes its outcome and leaves with ``os._exit`` (137 at its crash point, as the
crash hook exits a spawned interpreter). *Spawn* (`spawned`, ``--spawn``, and the only
way where ``os.fork`` is missing): each run is a fresh ``python -m machines.crashkit.matrix
--child`` interpreter that imports the module again. Either way the parent reads the
run's exit status, and its stderr through a pipe, and all that the next run sees comes
from the files the killed one left. A forked child starts from the parent's memory, so
the parent never runs a scenario or opens a spine (it reads the files a run leaves
read-only, taking no lock), and forks only while it has a single thread (`threads`).
``random`` reseeds itself in a forked child, as in a new interpreter.

`drive` runs *jobs*: generators that yield the runs they need one after another (each
gets its exit status and stderr back) and return their failures, up to ``at_once``
jobs at a time.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable, Generator, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from machines.crashkit.rig import WORLD_CRASH

__all__ = ["CRASH_VARIABLES", "Exit", "Job", "Run", "Started", "drive", "forked", "spawned"]

CRASH_VARIABLES = ("HZ_CRASH_AT", WORLD_CRASH)
"""The variables that set a run's crash point; a run has only the ones it is given."""


@dataclass(frozen=True)
class Run:
    """One process to run: the scenario in ``workdir``, with these crash variables."""

    workdir: Path
    crash: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Exit:
    """How a run ended: its exit status (``-N`` for signal N) and what it wrote to stderr."""

    status: int
    stderr: str


Job = Generator[Run, Exit, list[str]]
"""Yields the runs it needs one after another, gets each one's `Exit`, returns failures."""


@dataclass
class Started:
    """A run's process: the read end of its stderr pipe and how to reap it."""

    fd: int
    reap: Callable[[], int]
    chunks: list[bytes] = field(default_factory=list)


def threads() -> int:
    """How many threads this process has (the kernel's count where there is one: a
    library may start one below `threading`)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def forked(play: Callable[[Path], int]) -> Callable[[Run], Started]:
    """Start each run as a forked child that calls ``play(workdir)`` and exits with its
    result (a crash point inside exits 137 first)."""

    running: set[int] = set()  # the pipes of the runs under way (``drive``'s jobs)

    def start(run: Run) -> Started:
        sys.stdout.flush()
        sys.stderr.flush()
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child; its exit status is what is tested
            _child({read, *running}, write, run, play)
        os.close(write)
        running.add(read)

        def reap() -> int:
            running.discard(read)
            return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

        return Started(read, reap)

    return start


def _child(inherited: set[int], write: int, run: Run, play: Callable[[Path], int]) -> None:
    code = 1
    try:
        for fd in inherited:  # no handle of another run's reaches this one
            os.close(fd)
        os.dup2(write, 2)
        os.close(write)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
        for name in CRASH_VARIABLES:
            os.environ.pop(name, None)
        os.environ.update(run.crash)
        code = play(run.workdir)
    except SystemExit as leaving:
        code = leaving.code if isinstance(leaving.code, int) else int(leaving.code is not None)
    except BaseException:  # an uncaught error ends it as it ends an interpreter
        traceback.print_exc()
    finally:
        try:
            sys.stderr.flush()
        finally:
            os._exit(code)


def spawned(target: str) -> Callable[[Run], Started]:
    """Start each run as a fresh ``python -m machines.crashkit.matrix --child`` interpreter."""

    def start(run: Run) -> Started:
        env = {k: v for k, v in os.environ.items() if k not in CRASH_VARIABLES}
        env.update(run.crash)
        child = subprocess.Popen(
            [sys.executable, "-m", "machines.crashkit.matrix", "--child", target, str(run.workdir)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        assert child.stderr is not None
        return Started(os.dup(child.stderr.fileno()), _closing(child))

    return start


def _closing(child: subprocess.Popen[bytes]) -> Callable[[], int]:
    def reap() -> int:
        assert child.stderr is not None
        child.stderr.close()
        return child.wait()

    return reap


def drive(
    jobs: Iterable[Job],
    start: Callable[[Run], Started],
    *,
    at_once: int = 1,
    stop_at_first_failure: bool = False,
) -> list[list[str]]:
    """Run ``jobs``, up to ``at_once`` at a time, each job's runs one after another;
    return each started job's failures, in the order the jobs came. With
    ``stop_at_first_failure`` no job starts after one has returned failures."""
    pending = iter(jobs)
    results: list[list[str]] = []
    selector = selectors.DefaultSelector()

    def advance(index: int, job: Job, ended: Exit | None) -> None:
        try:
            run = next(job) if ended is None else job.send(ended)
        except StopIteration as done:
            results[index] = done.value
            return
        workdir = run.workdir
        workdir.mkdir(mode=0o700, parents=True, exist_ok=True)
        started = start(run)
        selector.register(started.fd, selectors.EVENT_READ, (index, job, started))

    def fill() -> None:
        while len(selector.get_map()) < at_once:
            if stop_at_first_failure and any(results):
                return
            job = next(pending, None)
            if job is None:
                return
            results.append([])
            advance(len(results) - 1, job, None)

    fill()
    while selector.get_map():
        for key, _ in selector.select():
            index, job, started = key.data
            chunk = os.read(started.fd, 65536)
            if chunk:
                started.chunks.append(chunk)
                continue
            selector.unregister(started.fd)
            os.close(started.fd)
            stderr = b"".join(started.chunks).decode("utf-8", "replace")
            advance(index, job, Exit(started.reap(), stderr))
        fill()
    selector.close()
    return results
