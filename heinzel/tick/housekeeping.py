"""Housekeeping, the tick's last step: what expired is pruned a little at a time.

Each tick prunes the expired bodies and inbox requests (`heinzel.session.retention`) of
at most `PER_TICK` Heinzelmännchen, in id order (asked of the index), going on where the
last tick stopped (``<home>/heinzel/housekeeping.json`` keeps the last id), and the source
cache once per UTC day; so a tick's work stays bounded however many Heinzelmännchen the
home holds, and every one is visited again after ``count / PER_TICK`` ticks.
``retention_days = 0`` prunes nothing. A failure is one error in the tick's report, never
the end of the tick.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from heinzel.session.retention import prune_cache, prune_heinzel
from heinzel.session.sessions import Sessions
from heinzel.store.inbox import Inbox
from heinzel.tick.isolate import isolated
from ledger.errors import HzError
from ledger.event import format_ts
from ledger.files import read_capped, write_atomic

__all__ = ["PER_TICK", "housekeep"]

PER_TICK: Final = 8
"""Heinzelmännchen whose bodies and inbox one tick prunes."""


def housekeep(sessions: Sessions, now: datetime, errors: list[dict[str, Any]]) -> list[str]:
    """Prune the next `PER_TICK` Heinzelmännchen and, once a day, the source cache; the
    names of the files deleted. Their inboxes' requests that lost their mark (a sender
    killed between the two writes) are marked again first, whatever ``retention_days``,
    so the next tick delivers them (`Inbox.remark`)."""
    days = sessions.settings.heinzel.retention_days
    path = sessions.home.heinzel_dir / "housekeeping.json"
    state = _read(path)
    after = str(state.get("after") or "")
    visited = _next(sessions, after)
    chosen = [i for i in visited if sessions.home.spine_path(i).is_file()]
    removed: list[str] = []
    for heinzel in chosen:
        with isolated(sessions, heinzel, errors, "inbox"):
            Inbox(sessions.home, heinzel).remark()
        if days > 0:
            with isolated(sessions, heinzel, errors, "prune"):
                removed += prune_heinzel(sessions, heinzel, now, days)
    day = format_ts(now)[:10]
    if days > 0 and state.get("cache_day") != day:
        with isolated(sessions, "source-cache", errors, "prune"):
            removed += prune_cache(sessions, now, days)
    pruned_day = day if days > 0 else state.get("cache_day")
    new = {"v": 1, "after": visited[-1] if visited else "", "cache_day": pruned_day}
    if new != state:
        # not fsynced: a power cut that loses the place starts the round again (`_read`)
        write_atomic(path, (json.dumps(new, sort_keys=True) + "\n").encode("utf-8"), sync=False)
    return removed


def _next(sessions: Sessions, after: str) -> list[str]:
    """The next `PER_TICK` Heinzelmännchen after ``after`` in id order, going round: one
    statement of two index range scans, whatever the number of them (every spine is in
    the index once it is opened: it catches up first)."""
    rows = sessions.index.db.execute(
        "SELECT id FROM (SELECT id FROM heinzel WHERE id > ? ORDER BY id LIMIT ?) "
        "UNION ALL SELECT id FROM (SELECT id FROM heinzel WHERE id <= ? ORDER BY id LIMIT ?)",
        [after, PER_TICK, after, PER_TICK],
    ).fetchall()
    return list(dict.fromkeys(str(r[0]) for r in rows))[:PER_TICK]


def _read(path: Path) -> dict[str, Any]:
    """The last tick's place; a missing or garbled file starts again from the first."""
    try:
        data = json.loads(read_capped(path, 4096, follow=False))
    except (OSError, ValueError, HzError):
        return {}
    return data if isinstance(data, dict) else {}
