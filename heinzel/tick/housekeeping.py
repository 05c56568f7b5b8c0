"""Housekeeping, the tick's last step: what expired is pruned a little at a time.

Each tick prunes the expired bodies and inbox requests (`heinzel.session.retention`) of
at most `PER_TICK` Heinzelmännchen, in id order, going on where the last tick stopped
(``<home>/heinzel/housekeeping.json`` keeps the last id), and the source cache once per
UTC day; so a tick's work stays bounded however many Heinzelmännchen the home holds, and
every one is visited again after ``count / PER_TICK`` ticks. ``retention_days = 0`` prunes
nothing. A failure is one error in the tick's report, never the end of the tick.
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
    ids = sorted(sessions.home.session_ids())
    after = str(state.get("after") or "")
    chosen = ([i for i in ids if i > after] + [i for i in ids if i <= after])[:PER_TICK]
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
    new = {"v": 1, "after": chosen[-1] if chosen else "", "cache_day": pruned_day}
    if new != state:
        write_atomic(path, (json.dumps(new, sort_keys=True) + "\n").encode("utf-8"))
    return removed


def _read(path: Path) -> dict[str, Any]:
    """The last tick's place; a missing or garbled file starts again from the first."""
    try:
        data = json.loads(read_capped(path, 4096, follow=False))
    except (OSError, ValueError, HzError):
        return {}
    return data if isinstance(data, dict) else {}
