"""Notices: what a user should know about a Heinzelmännchen now, from the index alone.

The tick prints what it did, but a user reads `hz heinzel list`, `hz heinzel show` and
`hz drafts` (issue 13, item 12), so each row carries its notices, each a reason, a short
message and the one command (or setting) that moves it:

- ``cap``: wakes of it were skipped today because the daily cap was reached;
- ``failed``: its last turn failed or was abandoned, with the reason kept;
- ``question``: it asked something (an outcome's question, or a write it proposed in a
  chat) that nobody answered yet; `show` prints the words and the command that answers;
- ``superseded``: a newer draft replaced a section the user had already approved in the
  document by deleting its tag; that approval counts for nothing (`hz drafts` has the new
  one);
- ``needed-by``: a reader needs its pending draft approved by a deadline (the latest
  nudge per need, until the deadline or the approval);
- ``fell-back``: its turn went on with an upstream's last approved version, stale (while
  that turn's draft waits);
- ``escalated``: it fell back and has placed no draft since, past the escalation;
- ``newer``: a newer hz wrote a turn of a later vocabulary into its spine: this hz reads
  it and writes nothing there (`heinzel.index.versions`).

No spine is opened: a fixed handful of queries per listing, however many rows.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any, Final, Protocol

from ledger.lazy import lazy_pattern

__all__ = ["ASKING_TURN_OPEN", "notices", "notices_by_id"]

ASKING_TURN_OPEN: Final = (
    "NOT EXISTS (SELECT 1 FROM turns t WHERE t.heinzel = a.heinzel AND t.ended_at IS NOT "
    "NULL AND a.key LIKE a.heinzel || '@question:' || t.id || ':%')"
)
"""SQL on a ``question.asked`` row ``a`` of the ``keys`` table: the turn that asked it has
not ended. A question whose turn ended unanswered (past ``max_wait``, or stopped) waits
on nobody: it is no longer listed, shown or answerable."""


class Database(Protocol):
    """What is read here: a plain sqlite3 connection or sqlite-utils' `Database`."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> sqlite3.Cursor: ...


def notices(
    db: Database,
    rows: Sequence[dict[str, Any]],
    *,
    today: str,
    id_field: str = "id",
    now: str | None = None,
) -> None:
    """Set ``notices`` on each row (its id in ``id_field``, and ``name``), a list of
    ``{reason, message, next}``; rows with nothing to say get ``[]``. ``now`` (a
    timestamp): a needed-by notice whose deadline is past says it is late."""
    names = {str(r[id_field]): str(r.get("name") or r[id_field]) for r in rows}
    by_id = notices_by_id(db, names, today=today, now=now)
    for row in rows:
        row["notices"] = by_id.get(str(row[id_field]), [])


def notices_by_id(
    db: Database,
    names: Mapping[str, str],
    *,
    today: str,
    every: bool = False,
    now: str | None = None,
) -> dict[str, list[dict[str, str]]]:
    """Each id's notices (``names``: id -> the name its commands use); ``[]`` for one
    with nothing to say. The listing asks this with plain tuples, not a dict per row;
    ``every``: ``names`` holds every Heinzelmännchen of the index (an unfiltered listing),
    so the queries name none of them (thousands of parameters cost more than the rows of
    others they skip)."""
    by_id: dict[str, list[dict[str, str]]] = {heinzel_id: [] for heinzel_id in names}
    if by_id:
        _newer(db, by_id)
        _cap(db, by_id, today, every)
        _failed(db, by_id, names, every)
        _superseded(db, by_id, every)
        _questions(db, by_id, names, every)
        _flow(db, by_id, names, today, every, now=now)
    return by_id


def _among(column: str, ids: dict[str, Any], every: bool) -> tuple[str, list[str]]:
    """SQL keeping the rows whose ``column`` is one of ``ids``, and its parameters; when
    ``ids`` are every Heinzelmännchen, the index's own ids (the rows of others, if any, are skipped
    all the same), with the same plan and no parameter."""
    if every:
        return f"{column} IN (SELECT id FROM heinzel)", []  # noqa: S608
    keys = sorted(ids)
    return f"{column} IN ({', '.join('?' for _ in keys)})", keys


def _newer(db: Database, by_id: dict[str, list[dict[str, str]]]) -> None:
    from heinzel.index.versions import newer, newer_note

    for heinzel, version in newer(db, by_id).items():
        by_id[heinzel].append(
            {
                "reason": "newer",
                "message": newer_note(version),
                "next": f"upgrade hz to one that knows vocabulary {version}",
            }
        )


def _cap(
    db: Database, by_id: dict[str, list[dict[str, str]]], today: str, every: bool = False
) -> None:
    among, ids = _among("heinzel", by_id, every)
    rows = db.execute(
        f"SELECT heinzel, COUNT(*) FROM turns WHERE {among} "  # noqa: S608
        "AND state = 'skipped' AND reason = 'cap' AND substr(started_at, 1, 10) = ? "
        "GROUP BY heinzel",
        [*ids, today],
    ).fetchall()
    for heinzel, count in rows:
        if str(heinzel) not in by_id:
            continue
        by_id[str(heinzel)].append(
            {
                "reason": "cap",
                "message": f"the daily cap is reached: {count} wake(s) skipped today",
                "next": "wait for tomorrow, or raise [heinzel] max_usd_per_day",
            }
        )


def _failed(
    db: Database,
    by_id: dict[str, list[dict[str, str]]],
    names: Mapping[str, str],
    every: bool = False,
) -> None:
    among, ids = _among("t.heinzel", by_id, every)
    rows = db.execute(
        "SELECT t.heinzel, t.disposition, t.state, t.reason, "  # noqa: S608
        "(SELECT h.state FROM heinzel h WHERE h.id = t.heinzel) FROM turns t "
        f"WHERE {among} AND t.id = (SELECT u.id FROM turns u "
        "WHERE u.heinzel = t.heinzel AND u.state != 'skipped' "
        "ORDER BY u.started_at DESC, u.start_seq DESC, u.id DESC LIMIT 1)",
        ids,
    ).fetchall()
    for heinzel, disposition, state, reason, now_state in rows:
        if str(heinzel) not in by_id:
            continue
        how = disposition if disposition in ("failed", "abandoned") else state
        if how not in ("failed", "abandoned"):
            continue
        name = names[str(heinzel)]
        # a retired one never wakes: its next step is to bring it back first
        again = (
            f"hz heinzel unretire {name}, then hz heinzel wake {name} tries again"
            if now_state == "retired"
            else f"hz heinzel wake {name} tries again"
        )
        by_id[str(heinzel)].append(
            {
                "reason": "failed",
                "message": f"the last turn {how}" + (f" ({reason})" if reason else ""),
                "next": f"hz heinzel show {name}; {again}",
            }
        )


def _superseded(db: Database, by_id: dict[str, list[dict[str, str]]], every: bool = False) -> None:
    """The tick's superseded notices (`heinzel.tick.superseded`), while a newer draft waits."""
    among, ids = _among("n.heinzel", by_id, every)
    try:
        rows = db.execute(
            f"SELECT n.heinzel, n.key FROM tick_notices n WHERE {among} "  # noqa: S608
            "AND n.reason = 'superseded' AND EXISTS (SELECT 1 FROM drafts d "
            "WHERE d.heinzel = n.heinzel AND d.state = 'pending') ORDER BY n.at",
            ids,
        ).fetchall()
    except sqlite3.OperationalError:  # an index an older hz made, read before a writer opened it
        return
    for heinzel, _ in rows:
        if str(heinzel) not in by_id:
            continue
        by_id[str(heinzel)].append(
            {
                "reason": "superseded",
                "message": "an older draft's section was approved in the document after a "
                "newer draft replaced it; that approval counts for nothing",
                "next": "approve the newer draft (hz drafts)",
            }
        )


def _questions(
    db: Database,
    by_id: dict[str, list[dict[str, str]]],
    names: Mapping[str, str],
    every: bool = False,
) -> None:
    """Questions asked and not answered (the keys table: one query for every row)."""
    among, ids = _among("a.heinzel", by_id, every)
    rows = db.execute(
        f"SELECT a.heinzel, COUNT(*) FROM keys a WHERE {among} "  # noqa: S608
        "AND a.kind = 'question.asked' AND NOT EXISTS (SELECT 1 FROM keys b "
        "WHERE b.heinzel = a.heinzel AND b.key = a.key AND b.kind = 'question.answered') "
        f"AND {ASKING_TURN_OPEN} GROUP BY a.heinzel",
        ids,
    ).fetchall()
    for heinzel, count in rows:
        if str(heinzel) not in by_id:
            continue
        name = names[str(heinzel)]
        by_id[str(heinzel)].append(
            {
                "reason": "question",
                "message": "a question waits for your answer"
                if count == 1
                else f"{count} questions wait for your answer",
                "next": f"hz heinzel show {name} (its words, and how to answer)",
            }
        )


def _flow(
    db: Database,
    by_id: dict[str, list[dict[str, str]]],
    names: Mapping[str, str],
    today: str,
    every: bool = False,
    *,
    now: str | None = None,
) -> None:
    """The flow's notices (`heinzel.index.flow`): one per need, however many nudges; a
    needed-by one past its deadline (``now`` after ``until``) in words that say it is late."""
    among, ids = _among("f.heinzel", by_id, every)
    try:
        rows = db.execute(
            "SELECT f.heinzel, f.reason, f.key, f.message, f.until FROM tick_flow f "  # noqa: S608
            f"WHERE {among} AND ("
            "(f.reason = 'needed-by' AND substr(f.until, 1, 10) >= ? AND EXISTS (SELECT 1 "
            "FROM drafts d WHERE d.heinzel = f.heinzel AND d.state = 'pending')) OR "
            "(f.reason = 'fell-back' AND EXISTS (SELECT 1 FROM drafts d WHERE "
            "d.heinzel = f.heinzel AND d.state = 'pending' AND d.placed_at >= f.at)) OR "
            "(f.reason = 'escalated' AND NOT EXISTS (SELECT 1 FROM drafts d WHERE "
            "d.heinzel = f.heinzel AND d.placed_at > f.at))) ORDER BY f.at DESC",
            [*ids, today],
        ).fetchall()
    except sqlite3.OperationalError:  # an index an older hz made, read before a writer opened it
        return
    shown: set[tuple[str, str]] = set()
    for heinzel, reason, key, message, until in rows:
        if str(heinzel) not in by_id:
            continue
        # a need's nudges differ in their lead only: the latest stands for them all
        need = str(key).rsplit(":", 1)[0] if reason == "needed-by" else str(key)
        if (str(heinzel), need) in shown:
            continue
        shown.add((str(heinzel), need))
        name = names[str(heinzel)]
        nexts = {
            "needed-by": "approve its draft (hz drafts) before the deadline",
            "fell-back": f"hz heinzel show {name}; approve the upstream's draft and "
            f"hz heinzel wake {name} to draft again",
            "escalated": f"hz heinzel show {name}; hz heinzel wake {name}",
        }
        said = {"reason": str(reason), "message": str(message), "next": nexts[str(reason)]}
        if reason == "needed-by" and now is not None and until and str(until) < now:
            said["message"] = _late(str(message))
            said["next"] = "approve its draft (hz drafts): the reader takes it at its next turn"
        by_id[str(heinzel)].append(said)


_needed_re = lazy_pattern(
    r"^(?P<reader>.+?) needs your approval of (?P<what>.+) by (?P<when>[^;]+);"
)


def _late(message: str) -> str:
    """A needed-by notice's words once its deadline passed: late, not "needs ... by"."""
    found = _needed_re().match(message)
    if found is None:
        return f"late: {message}"
    return (
        f"late: {found['reader']} needed your approval of {found['what']} by "
        f"{found['when']}; it goes on with the last version you approved"
    )
