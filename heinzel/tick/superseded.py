"""Approvals of superseded drafts, read from the document (issue 13, item 1).

A section approved in the document (its tag line deleted) is only observed while its
draft is pending. When a newer draft of the same output was placed before the tick read
the approval, the older one is superseded in the index and its approval would be ignored
in silence; `hz approve KEY` of it is refused (HZH250) but the document said nothing.
Each tick therefore reads, once, the section of every superseded draft it has not read
yet (at most `PER_TICK`; ``tick_superseded`` remembers which). One the user approved in
the document gets a ``notice.posted{reason: superseded, day, message}`` keyed
``<id>@notice:superseded:<hash of the draft key>``: the tick prints it and `hz heinzel
list`, `show` and `hz drafts` carry it (`heinzel.index.notices`) until a newer draft is
approved or rejected. A section that is gone or still tagged needs nothing; one that
cannot be read is read again next tick.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from heinzel.capabilities.protocols import Approved, Unknown
from heinzel.session.sessions import Sessions
from heinzel.tick.isolate import isolated
from ledger.event import format_ts, sha256_hex
from ledger.index import write_transaction

__all__ = ["PER_TICK", "superseded_approvals"]

PER_TICK: Final = 20
"""Superseded drafts one tick reads."""


def superseded_approvals(
    service: Sessions, adapters: Mapping[str, object], errors: list[dict[str, Any]]
) -> list[str]:
    """Read the sections of superseded drafts not read yet; post a notice for each one the
    user approved in the document. The notices' texts."""
    db = service.index.db
    rows = db.execute(
        "SELECT d.key, d.heinzel, d.output FROM drafts d WHERE d.state = 'superseded' "
        "AND NOT EXISTS (SELECT 1 FROM tick_superseded s WHERE s.key = d.key) "
        "ORDER BY d.placed_at LIMIT ?",
        [PER_TICK],
    ).fetchall()
    if not rows:
        return []  # the adapters are built only for a draft to read (issue 42)
    documents = adapters.get("documents")
    if documents is None:
        return []
    now = service.clock()
    posted: list[str] = []
    read: list[str] = []
    for key, heinzel, output in rows:
        state = None
        with isolated(service, str(heinzel), errors, "superseded draft"):
            state = documents.draft_state(key)  # type: ignore[attr-defined]
        if state is None or isinstance(state, Unknown):
            continue
        read.append(str(key))
        if isinstance(state, Approved):
            text = (
                f"a section of an older {output or 'output'} draft was approved in the "
                "document after a newer draft replaced it; that approval counts for nothing: "
                "approve the newer one (hz drafts)"
            )
            with service.open_spine(str(heinzel)) as spine:
                spine.append(
                    "notice.posted",
                    {"reason": "superseded", "day": format_ts(now)[:10], "message": text},
                    key=f"{heinzel}@notice:superseded:{sha256_hex(str(key).encode())[:16]}",
                    short_text=("message",),
                )
            posted.append(text)
    if read:
        with write_transaction(db):
            db.conn.executemany(
                "INSERT OR IGNORE INTO tick_superseded VALUES (?, ?)",
                [(k, format_ts(now)) for k in read],
            )
    return posted
