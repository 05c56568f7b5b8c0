"""What each Heinzelmännchen's last turn read: the fingerprint of every input it was handed.

A source "moved" for a watcher only against this (ADR 0049 statement 4): a turn run by the
tick, by ``hz heinzel wake`` or by a chat records what it read, so the next tick does not
wake ``source-changed`` for a source the last turn already saw. Kept in the index beside
the derived tables; losing it (a new index file) costs at most one extra render.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ledger.index import write_transaction

if TYPE_CHECKING:
    from sqlite_utils import Database

__all__ = ["SEEN_STATE", "record_seen"]

SEEN_STATE = """
CREATE TABLE IF NOT EXISTS tick_seen (
    heinzel TEXT NOT NULL, input TEXT NOT NULL, fingerprint TEXT, PRIMARY KEY (heinzel, input)
);
"""


def record_seen(db: Database, rows: Iterable[tuple[str, str, str]]) -> None:
    """Record ``(heinzel, input, fingerprint)`` as what the watcher's last turn read."""
    values = [list(r) for r in rows]
    if not values:
        return
    db.conn.executescript(SEEN_STATE)
    with write_transaction(db):
        db.conn.executemany("INSERT OR REPLACE INTO tick_seen VALUES (?, ?, ?)", values)
