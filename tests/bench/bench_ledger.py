"""Ledger figures, each beside a baseline measured in the same run.

- a durable spine append vs the raw floor (``os.write`` + ``os.fsync`` of the
  same bytes to a file in the same directory), interleaved in blocks so both see
  the same disk weather; target: within 1.3x;
- events read per second vs bare ``json.loads`` of the same lines;
- rebuilding the index from 1,000 spines of 1,000 events;
- the list query over 10,000 index rows; target: under 50 ms.

Run with ``make bench`` (or ``.venv/bin/python tests/bench/run.py ledger``).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from sqlite_utils import Database

from ledger.event import Event, make_event
from ledger.index import Index
from ledger.reading import read_events
from ledger.spine import Spine

BLOCKS = 200
PER_BLOCK = 10
SPINES = 1000
EVENTS = 1000
LIST_ROWS = 10_000


def clock() -> datetime:
    return datetime(2026, 10, 30, 15, 0, tzinfo=UTC)


def payload(n: int) -> dict[str, object]:
    """A typical spine payload: ids, a hash, a cost (about 200 bytes a line)."""
    return {
        "step": "act",
        "effect": "documents.place_draft",
        "hash": "sha256:" + format(n, "064x"),
        "usd": 0.0123,
        "tokens": 1200 + n % 100,
    }


class Inside:
    """``os.fsync`` timed: the seconds spent inside it since the last `take`."""

    def __init__(self) -> None:
        self.real, self.seconds = os.fsync, 0.0

    def __call__(self, fd: int) -> None:
        start = time.perf_counter()
        try:
            self.real(fd)
        finally:
            self.seconds += time.perf_counter() - start

    def take(self) -> float:
        seconds, self.seconds = self.seconds, 0.0
        return seconds


def bench_append(root: Path) -> None:
    """Blocks of spine appends and raw writes of the same bytes to a file in the spine's
    directory, alternated block by block, which of the two goes first alternating too (a
    disk whose weather moves within seconds treats both alike); the verdict is on the
    median of each pair's ratio, the ratio of the two medians printed beside it. Each is
    split into the time inside ``fsync`` (the disk's: the same for both when the spine
    asks no more of it) and the time outside (hz's part, and the raw ``write``)."""
    times: dict[str, list[float]] = {"spine": [], "raw": []}
    inside: dict[str, list[float]] = {"spine": [], "raw": []}
    clock_fsync = Inside()
    os.fsync = clock_fsync  # type: ignore[assignment]
    try:
        with Spine.open(root / "spine", clock=clock) as spine:
            raw_fd = os.open(
                spine.directory / "raw.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600
            )
            os.fsync(raw_fd)
            spine.append("effect.done", payload(-1))  # the file's first block, not timed
            for block in range(BLOCKS):
                payloads = [payload(block * PER_BLOCK + n) for n in range(PER_BLOCK)]
                lines = [spine_line(block * PER_BLOCK + n, d) for n, d in enumerate(payloads)]

                def appends(payloads: list[dict[str, object]] = payloads) -> None:
                    for data in payloads:
                        spine.append("effect.done", data)

                def raw(lines: list[bytes] = lines) -> None:
                    for line in lines:
                        os.write(raw_fd, line)
                        os.fsync(raw_fd)

                order = (("raw", raw), ("spine", appends))
                for name, measure in order if block % 2 else order[::-1]:
                    clock_fsync.take()
                    start = time.perf_counter()
                    measure()
                    times[name].append((time.perf_counter() - start) / PER_BLOCK)
                    inside[name].append(clock_fsync.take() / PER_BLOCK)
            os.close(raw_fd)
    finally:
        os.fsync = clock_fsync.real
    ratio = statistics.median(s / r for s, r in zip(times["spine"], times["raw"], strict=True))
    spine_us, raw_us = (statistics.median(times[k]) * 1e6 for k in ("spine", "raw"))
    print(f"append (durable)      {spine_us:9.1f} us   raw write+fsync {raw_us:9.1f} us", end="")
    print(f"   ratio {ratio:.2f}x (of the medians {spine_us / raw_us:.2f}x)")
    spine_in, raw_in = (statistics.median(inside[k]) * 1e6 for k in ("spine", "raw"))
    outside = {
        k: statistics.median(t - i for t, i in zip(times[k], inside[k], strict=True)) * 1e6
        for k in ("spine", "raw")
    }
    print(
        f"  inside fsync: append {spine_in:7.1f} us, raw {raw_in:7.1f} us "
        f"({spine_in / raw_in:.2f}x); outside it: append {outside['spine']:5.1f} us "
        f"(hz's part and its write), raw {outside['raw']:5.1f} us (its write)"
    )
    verdict = "PASS" if ratio <= 1.3 else "MISS"
    print(f"{verdict} durable append against raw write+fsync: {ratio:.2f}x (target 1.3x)")


def spine_line(n: int, data: dict[str, object]) -> bytes:
    """A line of the size a spine append of ``data`` writes (the raw floor's bytes)."""
    event = make_event(
        seq=n + 2,
        ts="2026-10-30T15:00:00.000Z",
        prev="0" * 64,
        kind="effect.done",
        data=data,
        offset=0,
    )
    return event.line()


_APPENDS = """
import os, sys
from datetime import UTC, datetime
from pathlib import Path
from ledger.spine import Spine
os.fsync = lambda fd: None  # hz's part alone: the disk's is the raw floor's
payloads = [{"step": "act", "effect": "documents.place_draft", "usd": 0.0123,
             "hash": "sha256:" + format(n, "064x"), "tokens": 1200 + n % 100} for n in range(2000)]
at = datetime(2026, 10, 30, 15, 0, tzinfo=UTC)
with Spine.open(Path(sys.argv[2]), clock=lambda: at) as spine:
    for data in payloads[: int(sys.argv[1])]:
        spine.append("effect.done", data)
"""


def append_instructions(root: Path) -> None:
    """hz's CPU per durable append as instructions (valgrind's cachegrind, fsync stubbed
    out: 2,000 appends less none, per line), a figure the machine's load does not move."""
    if shutil.which("valgrind") is None:
        print("append instructions: valgrind is not installed")
        return
    tool = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    counts = []
    for n in (0, 2000):
        argv = [*tool, sys.executable, "-c", _APPENDS, str(n), str(root / f"counted-{n}")]
        done = subprocess.run(argv, capture_output=True, text=True, check=True)
        refs = next(line for line in done.stderr.splitlines() if "refs:" in line.split())
        counts.append(int(refs.split("refs:")[1].strip().replace(",", "")))
    per_line = (counts[1] - counts[0]) / 2000
    print(f"append (durable), hz's part: {per_line / 1000:6.0f} k instructions a line")


def spine_content(events: int) -> bytes:
    """The bytes of a valid spine of ``events`` events (built without fsync)."""
    lines: list[bytes] = []
    prev: str | None = None
    offset = 0
    for seq in range(1, events + 1):
        kind = "turn.started" if seq % 10 == 1 else "effect.done"
        event = make_event(
            seq=seq,
            ts="2026-10-30T15:00:00.000Z",
            prev=prev,
            kind=kind,
            data=payload(seq),
            turn=f"turn-{seq // 10}",
            offset=offset,
        )
        line = event.line()
        lines.append(line)
        prev, offset = event.hash, offset + len(line)
    return b"".join(lines)


def bench_read(root: Path) -> None:
    """read_events over 100,000 events vs json.loads of the same lines."""
    path = root / "read.jsonl"
    path.write_bytes(spine_content(100_000))
    start = time.perf_counter()
    count = sum(1 for _ in read_events(path))
    spine_rate = count / (time.perf_counter() - start)
    start = time.perf_counter()
    with path.open("rb") as handle:
        bare = sum(1 for line in handle if json.loads(line))
    bare_rate = bare / (time.perf_counter() - start)
    print(
        f"read                  {spine_rate:9.0f} ev/s json.loads only {bare_rate:9.0f} /s", end=""
    )
    print(f"   ratio {bare_rate / spine_rate:.2f}x")


class ListProjection:
    """Like heinzel's list row: one row per source, updated by each event."""

    name = "bench_list"

    def create(self, db: Database) -> None:
        db.execute(
            "CREATE TABLE IF NOT EXISTS bench_list (source TEXT PRIMARY KEY, name TEXT,"
            " state TEXT, events INTEGER, last_turn TEXT, usd REAL, asset TEXT)"
        )
        db.execute("CREATE INDEX IF NOT EXISTS bench_list_state ON bench_list (state)")

    def apply(self, db: Database, source: str, event: Event) -> None:
        db.conn.execute(
            "INSERT INTO bench_list (source, name, state, events, last_turn, usd, asset)"
            " VALUES (?, ?, ?, 1, ?, ?, ?) ON CONFLICT(source) DO UPDATE SET"
            " events = events + 1, last_turn = excluded.last_turn, usd = usd + excluded.usd,"
            " state = excluded.state",
            (
                source,
                f"name-{source}",
                "waiting" if event.kind == "effect.done" else "awake",
                event.turn,
                float(event.data.get("usd", 0.0)),
                f"doc:team/{source}",
            ),
        )

    def clear(self, db: Database, source: str) -> None:
        db.conn.execute("DELETE FROM bench_list WHERE source = ?", (source,))


def bench_rebuild(root: Path) -> None:
    """Index.rebuild over 1,000 spines of 1,000 events (one spine's bytes, copied)."""
    content = spine_content(EVENTS)
    sources: dict[str, Path] = {}
    for number in range(SPINES):
        directory = root / "spines" / f"hz-{number:04d}"
        directory.mkdir(parents=True)
        (directory / "session.jsonl").write_bytes(content)
        sources[directory.name] = directory / "session.jsonl"
    with Index(root / "rebuild.sqlite", [ListProjection()]) as index:
        start = time.perf_counter()
        index.rebuild(sources)
        seconds = time.perf_counter() - start
    total = SPINES * EVENTS
    print(f"rebuild {SPINES} x {EVENTS}   {seconds:9.1f} s    ({total / seconds:,.0f} events/s)")
    shutil.rmtree(root / "spines")


def bench_list(root: Path) -> None:
    """The list query over 10,000 rows: all of them, and one state."""
    database = Database(root / "list.sqlite")
    projection = ListProjection()
    projection.create(database)
    with database.atomic():
        for number in range(LIST_ROWS):
            database.conn.execute(
                "INSERT INTO bench_list VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    f"hz-{number:05d}",
                    f"name-{number:05d}",
                    ("asleep", "waiting", "awake", "paused")[number % 4],
                    number,
                    f"turn-{number}",
                    0.01 * number,
                    f"doc:team/{number % 50}",
                ),
            )
    everything: list[float] = []
    one_state: list[float] = []
    for _ in range(20):
        start = time.perf_counter()
        rows = list(database.query("SELECT * FROM bench_list ORDER BY name"))
        everything.append(time.perf_counter() - start)
        start = time.perf_counter()
        waiting = list(
            database.query("SELECT * FROM bench_list WHERE state = ? ORDER BY name", ["waiting"])
        )
        one_state.append(time.perf_counter() - start)
    assert len(rows) == LIST_ROWS and len(waiting) == LIST_ROWS // 4
    all_ms = statistics.median(everything) * 1e3
    state_ms = statistics.median(one_state) * 1e3
    print(f"list {LIST_ROWS} rows        {all_ms:9.1f} ms   (state filter {state_ms:.1f} ms)")
    verdict = "PASS" if all_ms < 50 else "MISS"
    print(f"{verdict} list query over {LIST_ROWS} index rows: {all_ms:.1f} ms (target < 50 ms)")
    database.close()


def main() -> None:
    """Print the ledger's figures."""
    with tempfile.TemporaryDirectory(dir=os.environ.get("HZ_BENCH_DIR")) as name:
        root = Path(name)
        bench_append(root)
        append_instructions(root)
        bench_read(root)
        bench_list(root)
        bench_rebuild(root)


if __name__ == "__main__":
    main()
