"""What a durable step asks of the disk, beside the fsync floor: the step's syscalls
rebuilt without hz one at a time, and hz's own step, in one process, alternated round by
round (the order rotating), each as the mean period of a steady loop of N.

A replay-safe step on either hz path makes, by strace (docs/spine.md, "What a durable
step costs beside the floor"): one ``write`` of its body record to the turn's body file,
one ``write`` of its ``tool.result`` line to the spine, one ``fsync`` of the spine. The
shapes, each adding one thing to the one before:

- ``floor``: a 64-byte append and ``fsync`` (``run.py``'s floor);
- ``line``: the same with the step's line size;
- ``+ body``: a body record written to a second file before it, as a step does;
- ``+ CPU``: a busy wait before the writes as long as ``PEERS_GAP_US`` (default 60: hz's
  CPU per step with fsync stubbed, as ``run.py`` prints it), which a step spends between
  one fsync and the next;
- ``+ index``: after the fsync, two frames of an SQLite WAL (24 bytes and 4 KiB each,
  ``pwrite``, no fsync), as hz's real turn host writes the index's rows per line (the
  bench's workers keep no index);

then hz's steps: the embedder (`embed_worker.py`) with its body on disk and in memory
(`InMemoryBody`: the spine alone), and the turn host (`hz_worker.py`). Per shape: the
median over rounds of the period and of its ratio to the floor of the same round, and
the time inside ``fsync`` with its ratio.

Usage: ``python tests/bench/peers/step_shape.py`` (``PEERS_ROUNDS``, default 30;
``PEERS_N``, default 20; ``PEERS_DIR`` the directory, by default the system's temporary
one).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import embed_worker
import hz_worker
from hz_worker import STAMPS, steps

from ledger.event import Event
from ledger.spine import Spine
from machines import InMemoryBody, Pins, Session, Settings, SpineIndex, SpineJournal, Wake, run_sync
from machines.crashkit.testing import ManualClock, RecordingSleep

REAL_FSYNC = os.fsync
INSIDE: list[float] = []
"""The seconds each ``fsync`` of the current loop took."""


def timed_fsync(fd: int) -> None:
    start = time.perf_counter()
    REAL_FSYNC(fd)
    INSIDE.append(time.perf_counter() - start)


class Shapes:
    """The shapes without hz, on files of their own in ``base`` (kept open, so no round
    pays a creation), and the index's WAL frames written at a growing offset."""

    def __init__(self, base: Path, n: int, gap_us: float, line: int) -> None:
        self.base, self.n, self.gap, self.line = base, n, gap_us / 1e6, line
        self.files: dict[str, int] = {}
        self.wal_offset = 0

    def fd(self, name: str) -> int:
        if name not in self.files:
            self.files[name] = os.open(
                self.base / name, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600
            )
        return self.files[name]

    def loop(self, size: int, *, body: bool, gap: bool, index: bool) -> tuple[float, float]:
        """The mean period between fsync returns and the mean time inside fsync."""
        name = f"{size}-{body}-{gap}-{index}"
        spine, record = self.fd(name), self.fd(name + ".body") if body else -1
        wal = self.fd(name + ".wal") if index else -1
        line = b"x" * (size - 1) + b"\n"
        ends = []
        INSIDE.clear()
        for _ in range(self.n):
            if gap:
                until = time.perf_counter() + self.gap
                while time.perf_counter() < until:
                    pass
            if body:
                os.write(record, b"y" * 122 + b"\n")
            os.write(spine, line)
            timed_fsync(spine)
            ends.append(time.perf_counter())
            if index:
                for _ in range(2):
                    os.pwrite(wal, b"h" * 24, self.wal_offset)
                    os.pwrite(wal, b"p" * 4096, self.wal_offset + 24)
                    self.wal_offset += 4120
        return (ends[-1] - ends[0]) / (self.n - 1), statistics.fmean(INSIDE[1:])


HELD: dict[Path, SpineIndex] = {}


def memory_turn(directory: Path, n: int, name: str) -> float:
    """The embedder's turn (`embed_worker.turn`) with its body in memory: the spine alone."""
    clock = ManualClock()
    settings = Settings(clock=clock, sleep=RecordingSleep())
    STAMPS.clear()

    def stamp(event: Event) -> None:
        if event.kind == "tool.result":
            STAMPS.append((time.perf_counter(), event.size))

    directory.mkdir(parents=True, exist_ok=True)
    with Spine.open(directory, clock=clock, on_durable=[stamp]) as spine:
        journal = SpineJournal.open(spine, index=HELD.get(directory))
        session = Session(journal, InMemoryBody(), steps(n, name), settings)
        run_sync(session.start(name, [Wake("asked", f"hz-peer@{name}")], Pins(1)))
    HELD[directory] = journal.index
    return 0.0


def hz_loop(turn: Callable[[Path, int, str], float], directory: Path, n: int, name: str):
    """A turn of ``n`` calls: the mean period between its ``tool.result`` lines made
    durable, and the mean time inside the fsyncs of those lines."""

    def loop() -> tuple[float, float]:
        INSIDE.clear()
        os.fsync = timed_fsync
        try:
            turn(directory, n, f"{name}{time.perf_counter_ns()}")
        finally:
            os.fsync = REAL_FSYNC
        (first, _), (last, _) = STAMPS[0], STAMPS[-1]
        # the turn's fsyncs: its first line, then one per call
        return (last - first) / (n - 1), statistics.fmean(INSIDE[2 : n + 1])

    return loop


def main() -> None:
    n = int(os.environ.get("PEERS_N", "20"))
    rounds = int(os.environ.get("PEERS_ROUNDS", "30"))
    gap = float(os.environ.get("PEERS_GAP_US", "60"))
    with tempfile.TemporaryDirectory(dir=os.environ.get("PEERS_DIR")) as tmp:
        base = Path(tmp)
        embed_worker.turn(base / "embedder", n, "warm")
        line = STAMPS[-1][1]
        hz_worker.turn(base / "host", n, "warm")
        memory_turn(base / "memory", n, "warm")
        shapes = Shapes(base, n, gap, line)
        loops: dict[str, Callable[[], tuple[float, float]]] = {
            "floor (64 B append + fsync)": lambda: shapes.loop(
                64, body=False, gap=False, index=False
            ),
            f"line ({line} B)": lambda: shapes.loop(line, body=False, gap=False, index=False),
            "+ body record to a 2nd file": lambda: shapes.loop(
                line, body=True, gap=False, index=False
            ),
            f"+ {gap:.0f} us CPU between fsyncs": lambda: shapes.loop(
                line, body=True, gap=True, index=False
            ),
            "+ index WAL frames (host)": lambda: shapes.loop(line, body=True, gap=True, index=True),
            "hz embedder step": hz_loop(embed_worker.turn, base / "embedder", n, "e"),
            "hz embedder, body in memory": hz_loop(memory_turn, base / "memory", n, "m"),
            "hz turn host step": hz_loop(hz_worker.turn, base / "host", n, "h"),
        }
        names = list(loops)
        got: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
        for r in range(rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                got[name].append(loops[name]())
        floor = got[names[0]]
        print(f"{rounds} rounds of {n}, alternated; medians over rounds (ratios per round)")
        for name in names:
            period = statistics.median(p for p, _ in got[name]) * 1e6
            inside = statistics.median(i for _, i in got[name]) * 1e6
            ratio = statistics.median(
                p / f for (p, _), (f, _) in zip(got[name], floor, strict=True)
            )
            in_ratio = statistics.median(
                i / f for (_, i), (_, f) in zip(got[name], floor, strict=True)
            )
            print(
                f"  {name:32s} period {period:8.1f} us ({ratio:4.2f}x floor)   "
                f"inside fsync {inside:8.1f} us ({in_ratio:4.2f}x)"
            )
        for fd in shapes.files.values():
            os.close(fd)


if __name__ == "__main__":
    sys.exit(main())
