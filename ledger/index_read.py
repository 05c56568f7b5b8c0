"""Reading the derived index with plain sqlite3, when it is current: no writer, no set-up.

A command that only reads (a listing, a show, a refusal) needs neither the writer's
library nor its set-up (file mode, WAL, ``CREATE TABLE``): the index it reads was set up
by whoever wrote it. `open_current` gives a plain connection to the index only when
reading from it answers the same as opening the writer would: the file is there, it holds
every table the reader asks for, and every spine's last line is its watermark (nothing a
kill left behind for `ledger.index.Index.refresh` to catch up). Otherwise it gives None,
and the caller opens the `ledger.index.Index`, which catches up first.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Collection, Mapping
from pathlib import Path

from ledger.index import BUSY_SECONDS, WATERMARKS, behind

__all__ = ["open_current"]

_MADE_SQL = "SELECT name, sql FROM sqlite_master WHERE type = 'table'"


def open_current(
    path: Path,
    sources: Mapping[str, Path],
    tables: Collection[str],
    columns: Collection[tuple[str, str]] = (),
) -> sqlite3.Connection | None:
    """A read connection to the index at ``path`` when it is current with ``sources``
    (source -> spine path) and holds ``tables`` and ``columns`` (``(table, column)``, the
    ones added after a table's first release); None when the writer must open it (and
    add what is missing)."""
    if not path.is_file():
        return None
    conn = sqlite3.connect(path, timeout=BUSY_SECONDS)
    try:
        made = {str(row[0]): str(row[1] or "") for row in conn.execute(_MADE_SQL)}
        if not {WATERMARKS, *tables} <= made.keys() or any(
            re.search(rf"\b{column}\b", made.get(table, "")) is None for table, column in columns
        ):
            conn.close()
            return None
        marks = {
            str(source): (int(seq), str(line_hash))
            for source, seq, line_hash in conn.execute(
                f"SELECT source, seq, hash FROM {WATERMARKS}"  # noqa: S608
            )
        }
    except sqlite3.Error:
        conn.close()
        return None  # the writer says what is wrong with it, coded
    if behind(marks, sources):
        conn.close()
        return None
    return conn
