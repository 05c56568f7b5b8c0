"""The spine lines a page receives as server-sent events: the current row first, then each
line appended after the seq the page has (``Last-Event-ID``), never the whole spine.

Where to start is found by reading the spine backwards from its end (`offset_after`); a
page further behind than `BACKLOG` lines gets the last `BACKLOG` and the current row.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from heinzel.errors import HeinzelError
from ledger.reading import read_events

__all__ = ["BACKLOG", "format_event", "last_seq", "lines_after", "offset_after", "seq_given"]

BACKLOG = 200
CHUNK = 65536
MAX_DIGITS = 18
"""The longest ``Last-Event-ID`` taken: a seq fits in a signed 64-bit integer."""


def _seq_of(line: bytes) -> int | None:
    try:
        value = json.loads(line)["seq"]
    except (ValueError, KeyError, TypeError):
        return None
    return value if isinstance(value, int) else None


def _complete_lines_backwards(path: Path) -> Iterator[tuple[int, bytes]]:
    """``(offset, line)`` of each complete line, last first, reading from the end."""
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        return
    with handle:
        end = os.fstat(handle.fileno()).st_size
        handle.seek(0)
        tail = b""
        position = end
        first = True
        while position > 0:
            start = max(0, position - CHUNK)
            handle.seek(start)
            block = handle.read(position - start) + tail
            position = start
            parts = block.split(b"\n")
            if first:
                parts.pop()  # what follows the last newline: empty, or a torn tail
                first = False
            tail = parts.pop(0) if position > 0 else b""
            offset = position + len(tail) + (1 if position > 0 else 0)
            offsets = []
            for part in parts:
                offsets.append(offset)
                offset += len(part) + 1
            for line_offset, part in zip(reversed(offsets), reversed(parts), strict=True):
                yield line_offset, part
        if tail:
            yield 0, tail


def seq_given(header: str) -> int | None:
    """The seq a ``Last-Event-ID`` header names (None when it is empty: start after now).

    Only what this stream sends is taken: a seq, up to 18 ASCII digits. Anything else (a
    5,000-digit number, which ``int`` refuses, a superscript ``²``, which ``isdigit``
    accepts) is ``HZH348``, never a server error."""
    if not header:
        return None
    if len(header) > MAX_DIGITS or not header.isascii() or not header.isdigit():
        raise HeinzelError(
            "HZH348",
            f"Last-Event-ID is not a seq of this stream: {header[:40]!r}"
            + ("..." if len(header) > 40 else ""),
            "reload the page; the stream sends the seq of each line as its id",
        )
    return int(header)


def offset_after(path: Path, seq: int) -> int:
    """The byte offset of the first line after ``seq`` (at most `BACKLOG` lines back)."""
    found = None
    for count, (offset, line) in enumerate(_complete_lines_backwards(path)):
        line_seq = _seq_of(line)
        if count >= BACKLOG or (line_seq is not None and line_seq <= seq):
            return found if found is not None else _end(path)
        found = offset
    return found if found is not None else 0


def _end(path: Path) -> int:
    for offset, line in _complete_lines_backwards(path):
        return offset + len(line) + 1
    return 0


def last_seq(path: Path) -> int:
    """The seq of the spine's last complete line (0 for none)."""
    for _, line in _complete_lines_backwards(path):
        return _seq_of(line) or 0
    return 0


def lines_after(path: Path, offset: int) -> tuple[list[dict[str, Any]], int]:
    """The complete lines from ``offset`` as the page shows them, and the next offset."""
    shown: list[dict[str, Any]] = []
    next_offset = offset
    for event in read_events(path, from_offset=offset):
        shown.append(
            {
                "seq": event.seq,
                "ts": event.ts,
                "kind": event.kind,
                "turn": event.turn,
                "data": dict(event.data),
            }
        )
        next_offset = event.offset + len(event.line())
    return shown, next_offset


def format_event(kind: str, data: dict[str, Any], event_id: int | None = None) -> str:
    """One server-sent event (JSON data on one line)."""
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"
