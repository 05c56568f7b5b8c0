"""Reference recorders: in memory, and JSONL files with fsync (tests, bench, demos).

The real recorder is the host's: spine lines through the ledger, records into
the turn body. These two keep the same contract (`heinzel.engine.spec.Recorder`)
so the engine runs end to end before it is wired, and `SpineLines` measures the
bytes the checkpoints would take as spine lines.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import field
from datetime import datetime
from pathlib import Path
from typing import Any

from ledger.event import canonical, format_ts, make_event, sha256_hex
from ledger.files import open_append
from ledger.records import mutable_record

__all__ = ["FileRecorder", "MemoryRecorder", "body_hash", "spine_bytes"]


def body_hash(record: Mapping[str, Any]) -> str:
    """The ``sha256:`` hash of a body record's canonical JSON."""
    return "sha256:" + sha256_hex(canonical(record).encode("utf-8"))


@mutable_record
class MemoryRecorder:
    """Checkpoints and body records kept in lists."""

    lines: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)

    def checkpoint(self, kind: str, data: Mapping[str, Any]) -> None:
        """Keep one checkpoint."""
        self.lines.append((kind, json.loads(canonical(dict(data)))))

    def body(self, record: Mapping[str, Any]) -> str:
        """Keep one body record (as its JSON round trip) and return its hash."""
        self.records.append(json.loads(canonical(dict(record))))
        return body_hash(record)

    def durable(self) -> None:
        """Nothing to do: memory is all there is."""


@mutable_record
class FileRecorder:
    """Checkpoints and body records appended to two JSONL files, each line fsynced."""

    directory: Path

    def _append(self, name: str, obj: Mapping[str, Any]) -> None:
        path = self.directory / name
        fd = open_append(path)
        try:
            os.write(fd, (canonical(dict(obj)) + "\n").encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)

    def checkpoint(self, kind: str, data: Mapping[str, Any]) -> None:
        """Append ``{"kind", "data"}`` to ``spine.jsonl``."""
        self._append("spine.jsonl", {"kind": kind, "data": dict(data)})

    def body(self, record: Mapping[str, Any]) -> str:
        """Append the record to ``body.jsonl`` and return its hash."""
        self._append("body.jsonl", record)
        return body_hash(record)

    def durable(self) -> None:
        """Nothing to do: every line was fsynced when written."""

    def read(self, name: str) -> list[dict[str, Any]]:
        """The records of ``spine.jsonl`` or ``body.jsonl`` (a torn last line is left out)."""
        path = self.directory / name
        if not path.exists():
            return []
        lines = path.read_text(encoding="utf-8").splitlines()
        out = []
        for line in lines:
            try:
                out.append(json.loads(line))
            except ValueError:
                break
        return out


def spine_bytes(
    lines: list[tuple[str, dict[str, Any]]], turn: str, at: datetime, start_seq: int = 1000
) -> int:
    """The bytes these checkpoints take as real spine lines (envelope, chain and newline)."""
    total, prev, seq = 0, "0" * 64, start_seq
    for kind, data in lines:
        event = make_event(
            seq=seq, ts=format_ts(at), prev=prev, turn=turn, kind=kind, key=None, data=data
        )
        raw = event.line()
        total += len(raw)
        prev, seq = sha256_hex(raw.rstrip(b"\n")), seq + 1
    return total
