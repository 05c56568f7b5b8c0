"""Bounded child processes: the only way a runner starts an agent.

The agent runs without a shell in its own session (so its own process group),
reads its standard input from a string, and has stdout and stderr drained by
threads and capped (8 MiB each; the excess is read and discarded, and flagged).
Past the timeout the whole group gets SIGTERM, then SIGKILL after a grace
period (2 s); whatever the agent left running in its group is killed when it
exits. The grace and the clock are parameters so tests need no timing luck.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from heinzel.runners.errors import RunnerError

__all__ = [
    "KILL_GRACE_S",
    "OUTPUT_CAP",
    "Monotonic",
    "ProcessOutcome",
    "resolve_executable",
    "run_bounded",
]

OUTPUT_CAP = 8 * 1024 * 1024
"""Bytes kept of each of stdout and stderr."""
KILL_GRACE_S = 2.0
"""Seconds between SIGTERM and SIGKILL."""
_CHUNK = 64 * 1024

Monotonic = Callable[[], float]
"""A monotonic clock in seconds (``time.monotonic`` outside tests)."""


@dataclass(frozen=True)
class ProcessOutcome:
    """How a bounded process ended and what it printed."""

    argv: tuple[str, ...]
    returncode: int
    """The exit status; negative: killed by that signal."""
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool
    stderr_truncated: bool
    timed_out: bool
    """True when the deadline passed and the group was signalled."""
    killed: bool
    """True when SIGTERM was not enough and the group got SIGKILL."""
    duration_s: float

    def stderr_tail(self, limit: int = 2000) -> str:
        """The end of stderr as text, for a reason a person reads."""
        return self.stderr[-limit:].decode("utf-8", errors="replace").strip()

    def exit_description(self) -> str:
        """``exit 3`` or ``killed by SIGKILL``."""
        if self.returncode < 0:
            try:
                return f"killed by {signal.Signals(-self.returncode).name}"
            except ValueError:
                return f"killed by signal {-self.returncode}"
        return f"exit {self.returncode}"


class _Drain(threading.Thread):
    """Reads one pipe to its end, keeping the first ``cap`` bytes."""

    def __init__(self, stream: IO[bytes], cap: int) -> None:
        super().__init__(daemon=True)
        self._fd = stream.fileno()
        self._stream = stream
        self._cap = cap
        self._lock = threading.Lock()
        self._data = bytearray()
        self.truncated = False

    def run(self) -> None:
        try:
            while chunk := os.read(self._fd, _CHUNK):
                with self._lock:
                    room = self._cap - len(self._data)
                    if room > 0:
                        self._data += chunk[:room]
                    if len(chunk) > room:
                        self.truncated = True
        finally:
            self._stream.close()

    def snapshot(self) -> bytes:
        with self._lock:
            return bytes(self._data)


class _Feed(threading.Thread):
    """Writes the standard input and closes it; a child that stops reading is not an error."""

    def __init__(self, stream: IO[bytes], data: bytes) -> None:
        super().__init__(daemon=True)
        self._stream = stream
        self._data = data

    def run(self) -> None:
        try:
            self._stream.write(self._data)
        except (OSError, ValueError):
            pass
        finally:
            with contextlib.suppress(OSError):
                self._stream.close()


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def run_bounded(
    argv: Sequence[str],
    *,
    stdin: str = "",
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    grace: float = KILL_GRACE_S,
    cap: int = OUTPUT_CAP,
    clock: Monotonic = time.monotonic,
) -> ProcessOutcome:
    """Run ``argv`` bounded by ``timeout`` seconds; HZR003 when it can't be started at all."""
    start = clock()
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
            close_fds=True,
        )
    except OSError as exc:
        raise RunnerError(
            "HZR003",
            f"could not start {argv[0]!r}: {exc.strerror or exc}",
            "check that the runner's executable exists, is executable and runs on this machine",
        ) from None
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    out, err = _Drain(proc.stdout, cap), _Drain(proc.stderr, cap)
    feed = _Feed(proc.stdin, stdin.encode("utf-8"))
    timed_out = killed = False
    try:
        for thread in (out, err, feed):
            thread.start()  # inside: a Ctrl-C while a thread starts must kill the group too
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _signal_group(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            killed = True
            _signal_group(proc.pid, signal.SIGKILL)
            proc.wait()
    except BaseException:
        # Interrupted while waiting (Ctrl-C, a stop): the agent never outlives hz's call.
        _signal_group(proc.pid, signal.SIGKILL)
        proc.wait()
        for thread, stream in ((out, proc.stdout), (err, proc.stderr), (feed, proc.stdin)):
            if thread.ident is None:  # never started: nothing else will close its pipe
                stream.close()
        raise
    # Whatever the agent left in its group dies with it.
    _signal_group(proc.pid, signal.SIGKILL)
    for thread in (out, err, feed):
        thread.join(timeout=grace)
    return ProcessOutcome(
        argv=tuple(argv),
        returncode=proc.returncode,
        stdout=out.snapshot(),
        stderr=err.snapshot(),
        stdout_truncated=out.truncated,
        stderr_truncated=err.truncated,
        timed_out=timed_out,
        killed=killed,
        duration_s=clock() - start,
    )


def resolve_executable(runner: str, program: str, env: Mapping[str, str]) -> str:
    """The absolute path of ``program`` on the run's PATH (HZR002 when it is not there)."""
    found = shutil.which(program, path=env.get("PATH", os.defpath))
    if found is None:
        raise RunnerError(
            "HZR002",
            f"runner {runner!r}: executable {program!r} not found on PATH",
            f"install it, or set [runners.{runner}] executable to its absolute path",
        )
    return os.path.abspath(found)
