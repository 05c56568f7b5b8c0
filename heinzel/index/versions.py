"""Spines a newer hz wrote: read what can be read, never written (docs/spine.md, "An older
hz and a newer home").

The index notes a turn pinned to a later vocabulary than `VOCABULARY_VERSION` as it folds
its ``turn.started`` (a ``marks`` row of kind ``newer.vocabulary.<n>``,
`heinzel.index.projection`); a write asks here first and is refused (HZH460) before the
spine's lock is taken, and the tick leaves such a Heinzelmännchen out with a notice.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from heinzel.errors import HeinzelError


class Database(Protocol):
    """A plain sqlite3 connection or sqlite-utils' `Database`."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> sqlite3.Cursor: ...


__all__ = ["NEWER", "newer", "newer_error", "newer_known", "newer_note"]

NEWER = "newer.vocabulary."
"""The prefix of the ``marks`` kind that notes a turn of a later vocabulary."""

_RANGE = "kind >= 'newer.vocabulary.' AND kind < 'newer.vocabulary/'"
_BY_ID = 64
"""Up to this many ids are looked up one by one; more read the marks once."""


def newer(db: Database, ids: Iterable[str] | None = None) -> dict[str, int]:
    """The Heinzelmännchen (of ``ids``, or all) whose spine holds a turn of a later
    vocabulary, each with the latest such version."""
    wanted = None if ids is None else dict.fromkeys(ids)
    if wanted is not None and len(wanted) <= _BY_ID:
        # a turn's or a tick's few: a search of `marks_kind` each, never a walk of the home's
        query = f"SELECT heinzel, kind FROM marks WHERE heinzel = ? AND {_RANGE}"  # noqa: S608
        rows = [row for i in wanted for row in db.execute(query, [i]).fetchall()]
    else:  # a listing's many: one pass over the index (a covering scan), filtered here
        rows = db.execute(f"SELECT heinzel, kind FROM marks WHERE {_RANGE}").fetchall()  # noqa: S608
        if wanted is not None:
            rows = [row for row in rows if row[0] in wanted]
    found: dict[str, int] = {}
    for heinzel, kind in rows:
        version = int(str(kind).removeprefix(NEWER))
        found[str(heinzel)] = max(version, found.get(str(heinzel), 0))
    return found


def newer_note(version: int) -> str:
    """How a reader marks what a newer hz wrote (`machines` loads only for one)."""
    from machines.vocabulary import VOCABULARY_VERSION

    return f"written by a newer hz (vocabulary {version}; this hz knows {VOCABULARY_VERSION})"


def newer_known(version: int) -> dict[str, int]:
    """``show --json``'s ``newer``: the later vocabulary and the one this hz knows."""
    from machines.vocabulary import VOCABULARY_VERSION

    return {"vocabulary": version, "known": VOCABULARY_VERSION}


def newer_error(name: str, version: int) -> HeinzelError:
    """HZH460: nothing is written to a spine a newer hz wrote."""
    return HeinzelError(
        "HZH460",
        f"{name} was {newer_note(version)}: this hz does not write there, "
        "as it would misread what the newer one recorded",
        f"upgrade hz to a version that knows vocabulary {version}; "
        "list, show, report and verify still read it",
    )
