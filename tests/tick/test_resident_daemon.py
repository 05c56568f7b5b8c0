"""`hz system daemon run` as a resident daemon (issue 42, item 2): each tick runs in a
forked process of its own, so a turn that crashes, or the daemon killed mid-turn, loses
nothing and runs nothing twice. Real processes throughout."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO

import pytest

from heinzel.store.home import Home
from ledger.reading import read_events
from tests import forkhz
from tests.tick.homes import FRIDAY, HZ, env, make_home, tick, turns
from tests.waits import HANG

PAUSED = Path(__file__).parent / "paused_daemon.py"


def _daemon(root: Path, err: IO[str], **extra: str) -> subprocess.Popen[str]:
    return forkhz.Popen(
        [HZ, "system", "daemon", "run", "--interval", "1"],
        cwd=root,
        env=env(root, **extra),
        stdout=subprocess.PIPE,
        stderr=err,
        text=True,
    )


def _lines_until(process: subprocess.Popen[str], wanted: str) -> list[str]:
    """The daemon's stdout lines up to the first that contains ``wanted`` (fails when
    the daemon exits first)."""
    assert process.stdout is not None
    seen: list[str] = []
    while not any(wanted in line for line in seen):
        line = process.stdout.readline()
        assert line, f"the daemon ended before {wanted!r}: {seen}"
        seen.append(line)
    return seen


def _stop(process: subprocess.Popen[str]) -> int:
    process.send_signal(signal.SIGTERM)
    assert process.stdout is not None
    process.stdout.read()
    process.stdout.close()
    return process.wait(timeout=HANG)


def _release(fifo: Path) -> None:
    """Let whoever waits at ``fifo`` go on (nothing when no one does)."""
    try:
        done = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return
    os.write(done, b"go\n")
    os.close(done)


def _lock_freed(lock: Path) -> bool:
    """Wait (up to the hang ceiling) until nobody holds ``lock``, as a writer would."""
    fd = os.open(lock, os.O_RDWR)
    try:
        waiter = threading.Thread(target=fcntl.flock, args=(fd, fcntl.LOCK_EX), daemon=True)
        waiter.start()
        waiter.join(HANG)
        return not waiter.is_alive()
    finally:
        os.close(fd)


def _started(root: Path, heinzel: str) -> list[str]:
    """The ``turn.started`` lines of a spine, by turn."""
    spine = read_events(Home(root / "home").spine_path(heinzel))
    return [str(e.data.get("turn") or e.key) for e in spine if e.kind == "turn.started"]


def _placed(root: Path, heinzel: str) -> int:
    """The drafts placed (each draft is one ``effect.started``; its end is on a line)."""
    spine = read_events(Home(root / "home").spine_path(heinzel))
    return sum(1 for e in spine if e.kind == "effect.started")


@pytest.mark.kill
def test_a_turn_that_crashes_ends_its_tick_process_not_the_daemon(tmp_path: Path) -> None:
    """HZ_CRASH_AT kills the first tick's process right after `turn.started`: the daemon
    reports HZH520 with the status, ticks again, its recovery drafts; one turn, one
    draft, and SIGTERM ends the daemon with 0."""
    root, (heinzel,) = make_home(tmp_path, 1)
    with (tmp_path / "err.txt").open("w+") as err:
        daemon = _daemon(root, err, HZ_CRASH_AT="after:turn.started")
        seen = _lines_until(daemon, "report-0: recovery -> drafted")
        assert _stop(daemon) == 0
        err.seek(0)
        stderr = err.read()
    assert "HZH520: the tick's process ended with exit status 137" in stderr, stderr
    assert "Traceback" not in stderr
    assert seen[0].startswith(f"tick at {FRIDAY[:-1]}.000Z: 1 woken")  # the second tick
    assert len(_started(root, heinzel)) == 1
    assert _placed(root, heinzel) == 1


@pytest.mark.kill
def test_each_due_turn_runs_once_across_the_daemons_ticks(tmp_path: Path) -> None:
    """Two Heinzelmännchen due: the first tick wakes both, the next wakes nobody; each
    spine has one turn and one draft."""
    root, ids = make_home(tmp_path, 2)
    with (tmp_path / "err.txt").open("w+") as err:
        daemon = _daemon(root, err)
        first = _lines_until(daemon, "tick at")
        rest = _lines_until(daemon, "tick at")
        assert _stop(daemon) == 0
    assert first[0].startswith(f"tick at {FRIDAY[:-1]}.000Z: 2 woken")
    assert any(": 0 woken" in line for line in rest), rest
    for heinzel in ids:
        assert len(_started(root, heinzel)) == 1
        assert _placed(root, heinzel) == 1


@pytest.mark.kill
def test_a_daemon_killed_mid_turn_leaves_the_turn_to_the_next_tick(tmp_path: Path) -> None:
    """The daemon's tick process pauses in the turn (model requests done, before the
    outcome); SIGKILL of the daemon ends it too (its spine lock free), and the next
    `hz system daemon tick` resumes that turn (recovery) and drafts once."""
    root, (heinzel,) = make_home(tmp_path, 1)
    sync = tmp_path / "sync"
    sync.mkdir()
    os.mkfifo(sync / "ready")
    os.mkfifo(sync / "go")
    err = (tmp_path / "err.txt").open("w+")
    daemon = forkhz.Popen(
        [sys.executable, str(PAUSED), str(sync), "--interval", "600"],
        cwd=root,
        env=env(root),
        stdout=subprocess.DEVNULL,
        stderr=err,
        text=True,
    )
    try:
        box: list[str] = []
        reader = threading.Thread(target=lambda: box.append((sync / "ready").read_text()))
        reader.start()
        while reader.is_alive() and daemon.poll() is None:
            reader.join(0.05)
        assert box == ["here\n"], err.read()
        daemon.kill()
        daemon.wait(timeout=HANG)
        # the kernel kills the tick's process as its daemon dies; once it is gone its spine
        # lock is free (a process that outlived its daemon would keep it: a hang, caught)
        assert _lock_freed(Home(root / "home").session_dir(heinzel) / "lock")
        assert _started(root, heinzel) and _placed(root, heinzel) == 0  # mid-turn
    finally:
        err.close()
        _release(sync / "go")  # a tick process that outlived its daemon would wait there
    report = tick(root)
    assert [w.get("woken_by") for w in report["woken"]] == ["recovery"], report
    assert report["woken"][0]["ended"][0]["disposition"] == "drafted", report
    assert len(_started(root, heinzel)) == 1
    assert _placed(root, heinzel) == 1
    assert [t["state"] for t in turns(root, "report-0")] == ["finished"]
