"""A durable step's CPU in the body and the index, against the former way in the same run.

Bodies: records of one turn put through `DiskBody` (one open handle, the body read
once) against the former put, which read the turn's whole body before each record
and reopened the file, read its tail and chmodded the directory per record; both
beside a bare ``write + fsync`` on an open file. Index: spine lines through
`Index.apply` (watermark by one prepared statement) against the former sqlite-utils
``rows_where`` and ``upsert`` for the watermark. CPU is ``time.process_time``.
"""

from __future__ import annotations

import os
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ledger.bodies import Bodies
from ledger.event import Event, canonical, format_ts, make_event
from ledger.files import (
    ensure_private_dir,
    last_newline_end,
    open_append,
    open_read,
)
from ledger.index import WATERMARKS, Index, Watermark
from machines.stores.disk_body import DiskBody

RECORDS = 200
LINES = 2_000
ROUNDS = 3


def value(n: int) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": f"step {n} " + "x" * 300}], "n": n}


class FormerBody(DiskBody):
    """The put before this change: whole body read per put, file reopened per record."""

    def put(self, turn: str, digest: str, value: Any) -> None:
        if (turn, digest) not in self._cache:
            self._load(turn)
        if (turn, digest) in self._cache:
            return
        path = self.bodies.path(turn)
        body = canonical({"kind": "value", "hash": digest, "value": value}).encode("utf-8")
        ensure_private_dir(self.bodies.directory)
        fd = open_append(path)
        try:
            size = os.fstat(fd).st_size
            if size:
                reader = open_read(path)
                try:
                    end = last_newline_end(reader, size)
                finally:
                    os.close(reader)
                if end < size:
                    os.ftruncate(fd, end)
            os.write(fd, body + b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)
        self._cache[(turn, digest)] = value


def body_cpu(kind: type[DiskBody], root: Path) -> float:
    body = kind(Bodies(root))
    start = time.process_time()
    for n in range(RECORDS):
        body.put("tn-bench", f"sha256:{n:064x}", value(n))
    spent = time.process_time() - start
    body.close()
    return spent / RECORDS


def bare_cpu(root: Path) -> float:
    fd = os.open(root / "bare.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    start = time.process_time()
    for n in range(RECORDS):
        line = canonical({"kind": "value", "hash": f"sha256:{n:064x}", "value": value(n)})
        os.write(fd, line.encode("utf-8") + b"\n")
        os.fsync(fd)
    spent = time.process_time() - start
    os.close(fd)
    return spent / RECORDS


class FormerIndex(Index):
    """The watermark before this change: sqlite-utils' generic queries on every line."""

    def _mark(self, source: str) -> Watermark | None:
        rows = list(self.db.table(WATERMARKS).rows_where("source = ?", [source]))
        if not rows:
            return None
        row = rows[0]
        return Watermark(row["seq"], row["hash"], row["at"])

    def _set_mark(self, source: str, mark: Watermark) -> None:
        self.db.table(WATERMARKS).upsert(
            {"source": source, "seq": mark.seq, "hash": mark.hash, "at": mark.offset},
            pk="source",
        )


def events(n: int) -> list[Event]:
    at = format_ts(datetime(2026, 1, 1, tzinfo=UTC))
    made: list[Event] = []
    prev: str | None = None
    offset = 0
    for seq in range(1, n + 1):
        event = make_event(
            seq=seq,
            ts=at,
            prev=prev,
            kind="step.started",
            data={"step": "think"},
            turn="t",
            offset=offset,
        )
        made.append(event)
        prev = event.hash
        offset += 100
    return made


def index_cpu(kind: type[Index], root: Path, lines: list[Event]) -> float:
    with kind(root / f"{kind.__name__}.sqlite", []) as index:
        start = time.process_time()
        for event in lines:
            index.apply("hz-bench", event)
        spent = time.process_time() - start
    return spent / len(lines)


def main() -> None:
    lines = events(LINES)
    best: dict[str, float] = {}
    for _ in range(ROUNDS):  # interleaved, best of each
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            figures = {
                "former body": body_cpu(FormerBody, root / "former"),
                "body": body_cpu(DiskBody, root / "now"),
                "bare": bare_cpu(root),
                "former index": index_cpu(FormerIndex, root, lines),
                "index": index_cpu(Index, root, lines),
            }
            for name, seconds in figures.items():
                best[name] = min(best.get(name, float("inf")), seconds)
    us = {name: seconds * 1e6 for name, seconds in best.items()}
    print(
        f"body put, CPU per record ({RECORDS} records of one turn, best of {ROUNDS}):"
        f" {us['body']:8.1f} us   former {us['former body']:8.1f} us"
        f"   bare write+fsync {us['bare']:8.1f} us"
    )
    print(
        f"  ratio former/now {us['former body'] / us['body']:.2f}x,"
        f" now/bare {us['body'] / us['bare']:.2f}x"
    )
    print(
        f"index apply, CPU per line ({LINES} lines, no projection, best of {ROUNDS}):"
        f" {us['index']:8.1f} us   former {us['former index']:8.1f} us"
        f"   ratio former/now {us['former index'] / us['index']:.2f}x"
    )
