"""Crash safety with real processes: a child appends and is SIGKILLed at random moments.

The moments are seeded (``HZ_KILL_SEED``, default below): how many acknowledged
appends the parent waits for before the kill, and where a simulated torn write
is left for the next writer to contain. After every kill the spine opens,
verifies, holds every append that was acknowledged, and accepts new appends.
Most rounds fork the child from this process (a real process, killed for real,
without paying Python's start-up per kill); a few run it as a fresh script.
"""

from __future__ import annotations

import importlib.util
import os
import random
import signal
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

import pytest

from ledger.event import make_event
from ledger.reading import read_events
from ledger.spine import Spine
from ledger.verify import verify

SEED = int(os.environ.get("HZ_KILL_SEED", "20261030"))
CHILD = Path(__file__).with_name("kill_child.py")
Spawn = Callable[[Path, int, int], Callable[[], None]]


def load_child() -> ModuleType:
    spec = importlib.util.spec_from_file_location("kill_child", CHILD)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


child = load_child()


def clock() -> datetime:
    return datetime(2026, 10, 30, 15, 0, tzinfo=UTC)


def fork_child(directory: Path, seed: int, out: int) -> Callable[[], None]:
    """Fork a child running kill_child.run; return a function that SIGKILLs and reaps it."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child, which never returns
        try:
            child.run(directory, seed, out)
        finally:
            os._exit(3)

    def kill() -> None:
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status), f"the child exited by itself ({status}), seed {SEED}"

    return kill


def exec_child(directory: Path, seed: int, out: int) -> Callable[[], None]:
    """Run kill_child.py with this Python as a new process, acks on its stdout."""
    process = subprocess.Popen([sys.executable, str(CHILD), str(directory), str(seed)], stdout=out)

    def kill() -> None:
        process.kill()
        assert process.wait() == -signal.SIGKILL, f"the child exited by itself, seed {SEED}"

    return kill


def kill_after(directory: Path, seed: int, wanted: int, spawn: Spawn) -> list[tuple[int, int]]:
    """Start a child, read ``wanted`` acks, SIGKILL it, then collect every ack it sent."""
    read_end, write_end = os.pipe()
    kill = spawn(directory, seed, write_end)
    os.close(write_end)
    received = b""
    with os.fdopen(read_end, "rb", buffering=0) as pipe:
        while received.count(b"\n") < wanted:
            chunk = pipe.read(65536)
            if not chunk:
                break
            received += chunk
        kill()
        received += pipe.read()
    complete = received[: received.rfind(b"\n") + 1]
    return [(int(seq), int(n)) for seq, n in (line.split() for line in complete.splitlines())]


def tear(path: Path, rng: random.Random) -> None:
    """Leave part of a line at the end, as a power cut mid-write would."""
    line = make_event(seq=1, ts="2026-10-30T15:00:00.000Z", prev=None, kind="x.y", data={}).line()
    with path.open("ab") as handle:
        handle.write(line[: rng.randint(1, len(line) - 1)])


def rounds(directory: Path, seed: int, count: int, spawn: Spawn) -> int:
    """Kill ``count`` children on one spine; check the promise after each kill."""
    rng = random.Random(seed)
    path = directory / "session.jsonl"
    acknowledged: dict[int, tuple[int, int]] = {}
    for number in range(count):
        child_seed = seed * 1000 + number
        acks = kill_after(directory, child_seed, rng.randint(0, 25), spawn)
        acknowledged.update({seq: (child_seed, n) for seq, n in acks})
        report = verify(path)
        where = f"seed {SEED}, spine seed {seed}, round {number}"
        assert [b.reason for b in report.breaks] in ([], ["torn-tail"]), where
        events = {e.seq: e for e in read_events(path)}
        for seq, (acked_seed, n) in acknowledged.items():
            assert seq in events, f"acknowledged seq {seq} lost ({where})"
            assert dict(events[seq].data) == child.payload(acked_seed, n), where
        with Spine.open(directory, clock=clock, lock_timeout=5) as spine:
            spine.append("test.after", {"round": number})
        assert verify(path).ok, where
        if rng.random() < 0.2:
            tear(path, rng)
    return count


@pytest.mark.kill
class TestKill:
    def test_forked_children_killed_at_random_moments(self, tmp_path: Path) -> None:
        """240 kills over 8 spines: nothing acknowledged is lost, every spine recovers."""
        kills = sum(
            rounds(tmp_path / f"spine-{index}", SEED + index, 30, fork_child) for index in range(8)
        )
        assert kills == 240

    def test_script_children_killed_at_random_moments(self, tmp_path: Path) -> None:
        """The same promise with the child as a fresh python process (6 kills)."""
        assert rounds(tmp_path / "spine", SEED + 100, 6, exec_child) == 6
