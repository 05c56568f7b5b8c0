"""What the home spent today, open turns included (the daily cap, ADR 0050 statement 5).

The index adds a turn's cost to its Heinzelmännchen's ``cost_today`` when the turn ends
(``turn.finished``, ``turn.skipped``) and each ``usage`` event at once. A turn still open
(running in another process, waiting, or left by a crash) has spent money too: each of
its ``model.request{usd}`` lines. `spent_today` adds that spend so far, read from the
spine from each open turn's start offset (a handful of turns, the tail of their spines),
so a turn that starts while another one runs sees the other's spend and two turns cannot
both pass the cap on the same stale figure.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from heinzel.store.home import Home
from ledger.errors import HzError
from ledger.event import format_ts
from ledger.index import Index
from ledger.reading import read_events

__all__ = ["open_spend", "spent_today"]

_SPEND = ("model.request",)


def spent_today(index: Index, home: Home, now: datetime, *, mine: Collection[str] = ()) -> float:
    """USD spent on ``now``'s UTC day across the home: ended turns and usage from the
    index, plus the spend so far of every open turn (``mine``: Heinzelmännchen whose open
    turns the caller counts itself, as a resumed turn does)."""
    day = format_ts(now)[:10]
    row = index.db.execute(
        "SELECT COALESCE(SUM(cost_today), 0) FROM heinzel WHERE cost_day = ?", [day]
    ).fetchone()
    return float(row[0] or 0.0) + open_spend(index, home, day, mine=mine)


def open_spend(index: Index, home: Home, day: str, *, mine: Collection[str] = ()) -> float:
    """The ``model.request`` spend on ``day`` of every turn not yet ended; a spine that
    cannot be read counts nothing here (verify and the tick report it)."""
    rows = index.db.execute(
        "SELECT id, heinzel, start_offset FROM turns "
        "WHERE ended_at IS NULL AND start_offset IS NOT NULL ORDER BY heinzel, start_offset"
    ).fetchall()
    total = 0.0
    for turn, heinzel, offset in rows:
        if heinzel in mine:
            continue
        try:
            for event in read_events(
                home.spine_path(str(heinzel)), from_offset=int(offset), kinds=_SPEND
            ):
                if event.turn == turn and event.ts[:10] == day:
                    total += float(event.data.get("usd") or 0.0)
        except (HzError, OSError, ValueError):
            continue
    return total
