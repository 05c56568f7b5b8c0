"""The flow's notices, posted by the tick (`heinzel.index.flow` decides them).

Each tick, after the wakes: the nudges due (an upstream whose draft a reader needs by a
deadline, at each declared lead time) and the escalations due (a reader that fell back
and has placed no draft ``after`` the deadline). Each is one ``notice.posted{reason,
day, message, to, until?}`` on the spine of the Heinzelmännchen it is about, keyed once
per deadline and lead (``<id>@notice:needed-by:...``, ``<id>@notice:escalated:...``),
so a notice is posted once whatever the number of ticks. Each runs isolated: a spine
another process holds is tried again by the next tick.
"""

from __future__ import annotations

from typing import Any

from heinzel.index.flow import due_escalations, due_nudges, needs
from heinzel.session.sessions import Sessions
from heinzel.tick.isolate import isolated

__all__ = ["flow_notices"]


def flow_notices(service: Sessions, errors: list[dict[str, Any]]) -> list[str]:
    """Post the nudges and escalations due now; their messages."""
    now = service.clock()
    db = service.index.db
    posted: list[str] = []
    known = needs(db)  # one query for both
    for notice in [*due_nudges(db, now, known), *due_escalations(db, now, known)]:
        with isolated(service, notice.heinzel, errors, "flow"):
            with service.open_spine(notice.heinzel) as spine:
                spine.append("notice.posted", notice.data, key=notice.key, short_text=("message",))
            posted.append(f"{notice.data['message']} (to {notice.data['to']})")
    return posted
