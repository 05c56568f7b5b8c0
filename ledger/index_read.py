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

import json
import os
import re
import sqlite3
from collections.abc import Collection, Mapping
from pathlib import Path
from stat import S_ISREG
from typing import Any

from ledger.event import sha256_hex
from ledger.index import BUSY_SECONDS, WATERMARKS, behind

__all__ = ["open_current"]

_MADE_SQL = "SELECT name, sql FROM sqlite_master WHERE type = 'table'"
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
_BLOCK = 65536
"""What is read of a spine from its watermark's line on; a longer tail goes to `behind`."""


def open_current(
    path: Path,
    sources: Mapping[str, str | Path],
    tables: Collection[str],
    columns: Collection[tuple[str, str]] = (),
    schema_version: int | None = None,
) -> sqlite3.Connection | None:
    """A read connection to the index at ``path`` when it is current with ``sources``
    (source -> spine path) and holds ``tables`` and ``columns`` (``(table, column)``, the
    ones added after a table's first release) and, when given, is of ``schema_version``;
    None when the writer must open it (and add what is missing, or refuse a newer one)."""
    if not path.is_file():
        return None
    conn = sqlite3.connect(path, timeout=BUSY_SECONDS)
    try:
        if schema_version is not None:
            (found,) = conn.execute("PRAGMA user_version").fetchone()
            if found != schema_version:  # older: the writer marks it; newer: HZL071
                conn.close()
                return None
        made = {str(row[0]): str(row[1] or "") for row in conn.execute(_MADE_SQL)}
        if not {WATERMARKS, *tables} <= made.keys() or any(
            re.search(rf"\b{column}\b", made.get(table, "")) is None for table, column in columns
        ):
            conn.close()
            return None
        marks = _Marks(conn)
        unsure, unsized = _unsure(marks, sources, marks.sizes())
    except sqlite3.Error:
        conn.close()
        return None  # the writer says what is wrong with it, coded
    if unsized:  # current, but seen by a read: the writer stores where those spines end
        conn.close()
        return None
    if unsure and behind(
        {s: (int(marks[s][0]), str(marks[s][1])) for s in unsure if s in marks}, unsure
    ):
        conn.close()
        return None
    return conn


class _Marks(dict[str, tuple[Any, ...]]):
    """The watermarks, ``(seq, hash, at, size)`` as stored, each read when it is looked up:
    a listing that sees every spine end at its stored size (`sizes`) reads no more than
    that column."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        super().__init__()
        self._conn = conn
        self._sizes: dict[str, Any] | None = None

    def sizes(self) -> dict[str, Any]:
        """source -> the stored size of its spine (the column alone), as one JSON object
        SQLite makes and `json.loads` reads: no Python row per source."""
        if self._sizes is None:
            query = f"SELECT json_group_object(source, size) FROM {WATERMARKS}"  # noqa: S608
            (text,) = self._conn.execute(query).fetchone()
            self._sizes = json.loads(text) if text else {}
        return self._sizes

    def __missing__(self, key: str) -> tuple[Any, ...]:
        query = f"SELECT seq, hash, at, size FROM {WATERMARKS} WHERE source = ?"  # noqa: S608
        row = self._conn.execute(query, (key,)).fetchone()
        if row is None:
            raise KeyError(key)
        value = self[key] = tuple(row)
        return value

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None


def _unsure(
    marks: Mapping[str, tuple[Any, ...]],
    sources: Mapping[str, str | Path],
    sizes: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Path], bool]:
    """The sources `ledger.index.behind` must look at: all but those with no spine and
    those whose spine ends in its watermark's line. That is seen by a ``stat`` when the
    writer stored where the line ends (``size``: the spine's size is exactly that), else
    with one open and one read (the bytes from the line's offset, read from just before
    it: a newline, then that line and the end of the file, its hash the watermark's).
    Anything else, or anything odd about the file, is left to `behind`, which answers
    exactly as before. Also whether a spine seen current by a read has no ``size`` that
    says so (an index made before ``size``, or a line applied by an older hz): the
    writer's `ledger.index.Index.refresh` then stores it, so the next reader stats.
    ``sizes`` (source -> stored size) is what the stat is checked against, the marks' own
    when not given."""
    if sizes is None:
        sizes = {source: mark[3] for source, mark in marks.items()}
    unsure: dict[str, Path] = {}
    unsized = False
    for source, spine in sources.items():
        try:
            stat = os.lstat(spine)
        except FileNotFoundError:
            continue  # no spine: never behind
        except OSError:
            stat = None
        size = sizes.get(source) if stat is not None else None
        if (
            stat is not None
            and type(size) is int
            and size > 0
            and S_ISREG(stat.st_mode)
            and stat.st_size == size
        ):
            continue  # ends where its watermark's line ends: a stat, no open
        try:
            fd = os.open(spine, _READ)
        except FileNotFoundError:
            continue  # no spine: never behind
        except OSError:
            if os.path.isfile(spine):  # a link or the like: `behind` refuses it, coded
                unsure[source] = Path(spine)
            continue
        mark = marks.get(source)
        at = mark[2] if mark is not None and isinstance(mark[2], int) and mark[2] >= 0 else -1
        try:
            data = os.pread(fd, _BLOCK, at - 1) if at > 0 else os.pread(fd, _BLOCK, 0)
        except OSError:  # a directory or the like
            if os.path.isfile(spine):
                unsure[source] = Path(spine)
            continue
        finally:
            os.close(fd)
        line = data[1:] if at > 0 else data
        if (
            mark is None
            or at < 0
            or (at > 0 and data[:1] != b"\n")
            or len(data) >= _BLOCK
            or not line.endswith(b"\n")
            or line.count(b"\n") != 1
            or sha256_hex(line[:-1]) != mark[1]
        ):
            unsure[source] = Path(spine)
        else:
            unsized = True
    return unsure, unsized
