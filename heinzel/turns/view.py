"""The past a turn sees (`SpineView`), read from the index and the spine's tail, so that a
turn's start costs the same in a session's first week and its third year.

The context (`heinzel.engine.context`) shows the last summary, every line after it, the
lines of the ``keep`` turns before it, and the ``previous_turns`` tool the last
`TOOL_TURNS`; the bodies are of the last ``keep`` turns. All of that lies after one byte
offset, found in the index (``turns.start_offset``, ``marks``): the earliest of the last
summary's, the kept turns' and the tool's turns' starts. The lines the context folds over
the whole history (context edits, lessons) are read one by one at the
offsets the index keeps for them. Without a summary the whole spine is read: at most
``summary_after_turns`` turns.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Final

from heinzel.engine import SpineRecord, SpineView
from heinzel.vocabulary import HOST_HIDDEN
from ledger.event import Event
from ledger.spine import read_events

if TYPE_CHECKING:
    from sqlite_utils import Database

__all__ = ["TOOL_TURNS", "spine_view"]

TOOL_TURNS: Final = 20
"""The most turns the ``previous_turns`` tool shows."""


def spine_view(db: Database, heinzel_id: str, path: Path, keep: int) -> SpineView:
    """The records a turn of ``heinzel_id`` needs, the index current with ``path``."""
    start = _start(db, heinzel_id, keep)
    tail = [e for e in read_events(path, from_offset=start) if e.kind not in HOST_HIDDEN]
    early = []
    if start:
        for row in db.execute(
            "SELECT line_offset FROM marks WHERE heinzel = ? AND line_offset < ? "
            "AND kind IN ('context.edit', 'lesson.recorded', 'lesson.dismissed') ORDER BY seq",
            [heinzel_id, start],
        ).fetchall():
            event = _event_at(path, int(row[0]))
            if event is not None:
                early.append(event)
    return SpineView(tuple(SpineRecord(e.seq, e.turn, e.kind, e.data) for e in [*early, *tail]))


def _start(db: Database, heinzel_id: str, keep: int) -> int:
    summary = db.execute(
        "SELECT seq, line_offset FROM marks WHERE heinzel = ? AND kind = 'summary.written' "
        "ORDER BY seq DESC LIMIT 1",
        [heinzel_id],
    ).fetchone()
    if summary is None:
        return 0
    seq, offset = int(summary[0]), int(summary[1])
    starts = [offset]
    for sql, params in (
        (
            "SELECT start_offset FROM turns WHERE heinzel = ? AND start_seq < ? "
            "ORDER BY start_seq DESC LIMIT ?",
            [heinzel_id, seq, max(keep, 0)],
        ),
        (
            "SELECT start_offset FROM turns WHERE heinzel = ? ORDER BY start_seq DESC LIMIT ?",
            [heinzel_id, TOOL_TURNS],
        ),
    ):
        starts += [int(r[0]) for r in db.execute(sql, params).fetchall() if r[0] is not None]
    return min(starts)


def _event_at(path: Path, offset: int) -> Event | None:
    return next(read_events(path, from_offset=offset), None)
