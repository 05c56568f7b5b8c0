"""Retention: what expires after ``[heinzel] retention_days`` (0 keeps everything).

A turn's body (`ledger.bodies.Bodies`) once the turn ended that many days ago, an inbox
request sent that long ago (`heinzel.store.inbox.Inbox.prune`), a source-cache entry
fetched that long ago (`heinzel.store.sources.SourceCache.prune`), and what the source
adapters kept (GitHub's listings, calendars) written that long ago
(`heinzel.store.sources.prune_kept`). The spine and the
index keep every turn, so `hz heinzel show` still lists a pruned one. `hz heinzel prune`
prunes everything at once (`prune_all`); the tick prunes a few Heinzelmännchen per tick
and the cache once a day (`heinzel.tick.housekeeping`), both through these functions.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from heinzel.session.sessions import Sessions
from heinzel.store.inbox import Inbox
from heinzel.store.sources import SourceCache, prune_kept
from ledger.bodies import Bodies

__all__ = ["prune_all", "prune_cache", "prune_heinzel"]


def prune_heinzel(sessions: Sessions, heinzel_id: str, now: datetime, days: int) -> list[str]:
    """Delete one Heinzelmännchen's expired bodies and inbox requests; the names deleted."""
    ended = sessions.queries.ended_turns(heinzel_id)
    removed = Bodies(sessions.home.session_dir(heinzel_id)).prune(
        now=now, retention_days=days, ended=ended
    )
    return removed + Inbox(sessions.home, heinzel_id).prune(now, days)


def prune_cache(sessions: Sessions, now: datetime, days: int) -> list[str]:
    """Delete the source-cache entries fetched more than ``days`` ago (HZH151 when the
    cache directory is not hz's own), and what the adapters kept that long ago."""
    removed = SourceCache.of(sessions.home).prune(now, days)
    return removed + prune_kept(sessions.home.heinzel_dir / "http", now, days)


def prune_all(sessions: Sessions) -> dict[str, Any]:
    """Everything expired in the home, at once: what `hz heinzel prune` does."""
    days = sessions.settings.heinzel.retention_days
    now = sessions.clock()
    removed: list[str] = []
    for heinzel_id in sessions.home.session_ids():
        removed += prune_heinzel(sessions, heinzel_id, now, days)
    removed += prune_cache(sessions, now, days)
    return {"retention_days": days, "removed": removed}
