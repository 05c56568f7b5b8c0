"""The past a turn sees (`SpineView`), read from the index and the spine's tail, so that a
turn's start costs the same in a session's first week and its third year.

The context (`heinzel.engine.context`) shows the last summary, every line after it, and
the lines of the ``keep`` turns before it; the bodies are of the last ``keep`` turns. All
of that lies after one byte offset, found in the index (``turns.start_offset``,
``marks``): the earlier of the last summary's and the kept turns' starts. The lines the
context folds over the whole history (context edits, lessons) are read one by one at the
offsets the index keeps for them. Without a summary the whole spine is read: at most
``summary_after_turns`` turns.

The ``previous_turns`` tool shows up to `TOOL_TURNS` turns, most of them older than the
context's: the view keeps their start offsets (one query) and its ``earlier(n)`` reads
their lines only when the tool is called, from the n-th last turn's start up to where
the view's own lines begin, so the tool shows what a view read whole at the turn's start
shows. It reads the file only (no SQLite), so it may run in the tool's worker thread.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Final

from heinzel.engine import SpineRecord, SpineView
from heinzel.vocabulary import HOST_HIDDEN
from ledger.event import Event
from ledger.spine import read_events
from machines.stores.journal import expand_carried

if TYPE_CHECKING:
    from sqlite_utils import Database

__all__ = ["TOOL_TURNS", "spine_view"]

TOOL_TURNS: Final = 20
"""The most turns the ``previous_turns`` tool shows."""

_ALL: Final = 2**62
"""A seq beyond any spine's last line."""


def spine_view(db: Database, heinzel_id: str, path: Path, keep: int) -> SpineView:
    """The records a turn of ``heinzel_id`` needs, the index current with ``path``; its
    ``earlier(n)`` adds the lines of the last n turns (None when the whole spine was read).
    """
    starts = _starts(db, heinzel_id, keep)
    if starts is None:
        return SpineView(_records(read_events(path)))
    start, tool_starts = starts
    tail = _records(read_events(path, from_offset=start))
    marks = db.execute(  # by kind (index marks_kind), then in seq order
        "SELECT seq, line_offset FROM marks WHERE heinzel = ? AND line_offset < ? "
        "AND kind IN ('context.edit', 'lesson.recorded', 'lesson.dismissed')",
        [heinzel_id, start],
    ).fetchall()
    early = [
        event for _, offset in sorted(marks) if (event := _event_at(path, int(offset))) is not None
    ]

    def earlier(n: int) -> SpineView:
        """The view with the lines of the last ``n`` turns it holds offsets for: the file
        is read from the first of them up to where the view's own lines start."""
        first = min([start, *tool_starts[: max(n, 0)]])
        between = []
        for event in read_events(path, from_offset=first):
            if event.offset >= start:
                break
            between.append(event)
        before = [e for e in early if e.offset < first]
        return SpineView((*_records(before), *_records(between), *tail))

    return SpineView((*_records(early), *tail), earlier=earlier)


def _records(events: Iterable[Event]) -> tuple[SpineRecord, ...]:
    return tuple(
        SpineRecord(e.seq, e.turn, e.kind, e.data)
        for e in expand_carried(events)  # what a line carries, as lines of their own
        if e.kind not in HOST_HIDDEN
    )


def _starts(db: Database, heinzel_id: str, keep: int) -> tuple[int, list[int]] | None:
    """Where the context's lines start (the last summary, the kept turns before it), and
    the starts of the last `TOOL_TURNS` turns, newest first; None: no summary yet."""
    summary = db.execute(
        "SELECT seq, line_offset FROM marks WHERE heinzel = ? AND kind = 'summary.written' "
        "ORDER BY seq DESC LIMIT 1",
        [heinzel_id],
    ).fetchone()
    if summary is None:
        return None
    seq, offset = int(summary[0]), int(summary[1])
    found = []
    for before, count in ((seq - 1, keep), (None, TOOL_TURNS)):
        rows = db.execute(
            "SELECT start_offset FROM turns WHERE heinzel = ? AND start_seq <= ? "
            "ORDER BY start_seq DESC LIMIT ?",
            [heinzel_id, _ALL if before is None else before, max(count, 0)],
        ).fetchall()
        found.append([int(r[0]) for r in rows if r[0] is not None])
    return min([offset, *found[0]]), found[1]


def _event_at(path: Path, offset: int) -> Event | None:
    return next(read_events(path, from_offset=offset), None)
