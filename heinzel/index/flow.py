"""The flow: an input's ``needed_by`` read from the index (docs/turns-in-hz.md, "The flow").

A reader's input that reads another Heinzelmännchen's output may say by when it is
needed (``hz.inputs.<name>.needed_by``: a deadline rule in the reader's timezone, nudges
before it, an escalation after it). The index keeps each such need (``tick_needs``) and
the assets every Heinzelmännchen writes (``tick_outputs``), so the upstream of a need is
one query: whoever writes the asset the input reads.

- **Late** means: at the deadline, an upstream has a draft of that output still pending
  (placed at or before the deadline, not approved or rejected since).
- **Nudges** (`due_nudges`): before a deadline, at each declared lead time, an upstream
  with a pending draft gets one notice, keyed per deadline and lead, so a nudge is posted
  once whatever the number of ticks; the surfaces show the latest one per need.
- **Fallback** (`fallbacks`): a reader's turn after a deadline its upstream missed reads
  the last approved version of the input (the pending sections left out) and records
  ``input.fell_back{input, upstream, output, deadline, approved_fp, approved_at, stale_s}``.
- **Escalation** (`due_escalations`): when the reader has placed no draft ``after`` the
  deadline it fell back at, the escalation's handle is told once per deadline.

Everything here is a read of the index at a given time: no spine is opened.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from ledger.event import format_ts, parse_ts
from ledger.records import frozen_record

__all__ = [
    "ALIASABLE",
    "Late",
    "Need",
    "Nudge",
    "aliased_reads",
    "deadline_after",
    "deadline_before",
    "due_escalations",
    "due_nudges",
    "fallbacks",
    "local",
    "local_time",
    "needs",
    "pending_draft",
    "unanswered",
    "upstream_inputs",
]


class Database(Protocol):
    """A plain sqlite3 connection or sqlite-utils' `Database`."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Any: ...


@frozen_record
class Need:
    """One input's ``needed_by``, as the index keeps it."""

    reader: str
    input: str
    asset: str
    at: str
    timezone: str
    nudge: tuple[int, ...]
    escalate_after: int | None
    escalate_to: str | None


@frozen_record
class Late:
    """An upstream's draft still pending at a need's deadline."""

    upstream: str
    name: str
    output: str
    draft: str
    placed_at: str


@frozen_record
class Nudge:
    """A notice to post: on whose spine, under which key, with what data."""

    heinzel: str
    key: str
    data: dict[str, Any]


def deadline_before(rule: str, timezone: str, now: datetime) -> datetime:
    """The latest deadline of ``rule`` at or before ``now``, in UTC."""
    from zoneinfo import ZoneInfo  # croniter and the zones only where a deadline is

    from croniter import croniter

    zone = ZoneInfo(timezone or "UTC")
    after = (now + timedelta(microseconds=1)).astimezone(zone)
    found: datetime = croniter(rule, after).get_prev(datetime)
    return found.astimezone(UTC)


def deadline_after(rule: str, timezone: str, now: datetime) -> datetime:
    """The first deadline of ``rule`` strictly after ``now``, in UTC."""
    from zoneinfo import ZoneInfo

    from croniter import croniter

    zone = ZoneInfo(timezone or "UTC")
    found: datetime = croniter(rule, now.astimezone(zone)).get_next(datetime)
    return found.astimezone(UTC)


def local_time(at: datetime, timezone: str) -> str:
    """A deadline as its reader wrote it: ``Fri 13 Nov 12:00 Europe/Berlin``."""
    from zoneinfo import ZoneInfo

    local = at.astimezone(ZoneInfo(timezone or "UTC"))
    return f"{local:%a} {local.day} {local:%b %H:%M} {timezone or 'UTC'}"


def needs(db: Database, reader: str | None = None) -> list[Need]:
    """Every need of the approved contracts (or of ``reader``'s); a retired reader needs
    nothing."""
    sql = (
        "SELECT n.heinzel, n.input, n.asset, n.at, n.timezone, n.nudge, n.escalate_after_s, "
        "n.escalate_to FROM tick_needs n JOIN heinzel h ON h.id = n.heinzel "
        "WHERE h.hold IS NOT 'retired'"
    )
    rows = db.execute(sql + " AND n.heinzel = ?", [reader]) if reader else db.execute(sql, [])
    return [
        Need(
            reader=str(r[0]),
            input=str(r[1]),
            asset=str(r[2]),
            at=str(r[3]),
            timezone=str(r[4] or "UTC"),
            nudge=tuple(int(n) for n in json.loads(r[5] or "[]") if n),
            escalate_after=None if r[6] is None else int(r[6]),
            escalate_to=r[7],
        )
        for r in rows.fetchall()
    ]


def late(db: Database, need: Need, by: datetime) -> list[Late]:
    """The upstreams of ``need`` with a draft of the output it reads pending since ``by``
    or earlier (the reader itself is never its own upstream)."""
    rows = db.execute(
        "SELECT d.heinzel, h.name, d.output, d.key, d.placed_at FROM tick_outputs o "
        "JOIN drafts d ON d.heinzel = o.heinzel AND d.output = o.output "
        "JOIN heinzel h ON h.id = d.heinzel "
        "WHERE o.asset = ? AND o.heinzel != ? AND d.state = 'pending' AND d.placed_at <= ? "
        "ORDER BY d.placed_at",
        [need.asset, need.reader, format_ts(by)],
    ).fetchall()
    return [Late(str(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4])) for r in rows]


def _user(db: Database, heinzel: str) -> str:
    row = db.execute("SELECT user FROM tick_users WHERE heinzel = ?", [heinzel]).fetchone()
    return str(row[0]) if row and row[0] else "owner"


def _name(db: Database, heinzel: str) -> str:
    row = db.execute("SELECT name FROM heinzel WHERE id = ?", [heinzel]).fetchone()
    return str(row[0]) if row else heinzel


def _posted(db: Database, key: str) -> bool:
    return db.execute("SELECT 1 FROM tick_notices WHERE key = ?", [key]).fetchone() is not None


def due_nudges(db: Database, now: datetime, known: list[Need] | None = None) -> list[Nudge]:
    """The nudges to post at ``now``: for each need whose next deadline is within its
    longest lead, each upstream with a pending draft gets the latest lead passed, once.
    ``known``: the needs already read this tick (one query for nudges and escalations)."""
    found: list[Nudge] = []
    for need in needs(db) if known is None else known:
        if not need.nudge:
            continue
        deadline = deadline_after(need.at, need.timezone, now)
        passed = [lead for lead in need.nudge if deadline - timedelta(seconds=lead) <= now]
        if not passed:
            continue
        from heinzel.contract.types import format_duration  # the contract models: by need

        lead = min(passed)
        reader = _name(db, need.reader)
        when = local_time(deadline, need.timezone)
        for one in late(db, need, now):
            key = (
                f"{one.upstream}@notice:needed-by:{need.reader}:{need.input}:"
                f"{format_ts(deadline)}:{format_duration(timedelta(seconds=lead))}"
            )
            if _posted(db, key):
                continue
            message = (
                f"{reader} needs your approval of {one.name}'s {one.output} by {when}; "
                "after that it goes on with the last version you approved"
            )
            data = {
                "reason": "needed-by",
                "day": format_ts(now)[:10],
                "message": message,
                "to": _user(db, one.upstream),
                "until": format_ts(deadline),
            }
            found.append(Nudge(one.upstream, key, data))
    return found


def due_escalations(db: Database, now: datetime, known: list[Need] | None = None) -> list[Nudge]:
    """The escalations to post at ``now``: a need with an escalation whose last deadline
    an upstream missed, and whose reader has placed no draft since, ``after`` it."""
    found: list[Nudge] = []
    for need in needs(db) if known is None else known:
        if need.escalate_after is None:
            continue
        deadline = deadline_before(need.at, need.timezone, now)
        if now < deadline + timedelta(seconds=need.escalate_after):
            continue
        missed = late(db, need, deadline)
        if not missed:
            continue
        drafted = db.execute(
            "SELECT 1 FROM drafts WHERE heinzel = ? AND placed_at > ? LIMIT 1",
            [need.reader, format_ts(deadline)],
        ).fetchone()
        key = f"{need.reader}@notice:escalated:{need.input}:{format_ts(deadline)}"
        if drafted is not None or _posted(db, key):
            continue
        from heinzel.contract.types import format_duration

        reader = _name(db, need.reader)
        message = (
            f"{reader} has no draft {format_duration(timedelta(seconds=need.escalate_after))} "
            f"after {local_time(deadline, need.timezone)}: its input {need.input} was late "
            f"({', '.join(sorted({m.name for m in missed}))}) and the fallback is late too"
        )
        data = {
            "reason": "escalated",
            "day": format_ts(now)[:10],
            "message": message,
            "to": need.escalate_to,
        }
        found.append(Nudge(need.reader, key, data))
    return found


def fallbacks(db: Database, reader: str, now: datetime) -> list[dict[str, Any]]:
    """What a turn of ``reader`` starting at ``now`` falls back on: per input whose last
    deadline an upstream missed, the upstream, the last approved version of its output
    (its time and fingerprint, None when it was never approved) and how stale it is."""
    found: list[dict[str, Any]] = []
    for need in needs(db, reader):
        deadline = deadline_before(need.at, need.timezone, now)
        for one in late(db, need, deadline):
            row = db.execute(
                "SELECT at, output_fp FROM tick_approved WHERE heinzel = ? AND output = ? "
                "ORDER BY at DESC LIMIT 1",
                [one.upstream, one.output],
            ).fetchone()
            approved_at = str(row[0]) if row and row[0] else None
            stale = None if approved_at is None else now - parse_ts(approved_at)
            found.append(
                {
                    "input": need.input,
                    "upstream": one.upstream,
                    "upstream_name": one.name,
                    "output": one.output,
                    "deadline": format_ts(deadline),
                    "deadline_local": local_time(deadline, need.timezone),
                    "approved_fp": None if row is None else row[1],
                    "approved_at": approved_at,
                    "stale_s": None if stale is None else int(stale.total_seconds()),
                    "user": _user(db, reader),
                }
            )
    return found


def upstream_inputs(db: Database, heinzel: str) -> frozenset[str]:
    """The names of ``heinzel``'s inputs that read another Heinzelmännchen's output (the
    asset an input reads, ``tick_reads``, that another one writes, ``tick_outputs``):
    gather gives them as approved (`heinzel.capabilities.documents.approved_text`). A
    local file is the same document however the input names it (`aliased_reads`), so no
    spelling hands a reader another's pending draft."""
    rows = db.execute(
        "SELECT DISTINCT r.input FROM tick_reads r JOIN tick_outputs o ON o.asset = r.asset "
        "WHERE r.heinzel = ? AND o.heinzel != ?",
        [heinzel, heinzel],
    ).fetchall()
    found = {str(r[0]) for r in rows}
    return frozenset(found | {read[1] for read in aliased_reads(db, [heinzel])})


def local(column: str) -> str:
    """SQL: ``column`` holds a local document's asset (``file:...``), a range the asset's
    index answers (a LIKE is a scan)."""
    return f"{column} >= 'file:' AND {column} < 'file;'"


ALIASABLE = (
    f"SELECT r.heinzel, r.input, r.asset FROM tick_reads r WHERE {local('r.asset')} "  # noqa: S608
    "AND NOT EXISTS (SELECT 1 FROM tick_outputs o "
    "WHERE o.asset = r.asset AND o.heinzel != r.heinzel)"
)
"""The reads `aliased_reads` looks at: local files whose spelling names no other one's
output, ``(reader, input, asset)``."""


def aliased_reads(
    db: Database,
    readers: Sequence[str] | None = None,
    *,
    reads: Sequence[tuple[str, str, str]] | None = None,
) -> list[tuple[str, str, str, str]]:
    """Each input (of ``readers``; of every one when None) that reads another
    Heinzelmännchen's local document under another spelling, ``(reader, input, writer,
    output)``: a path through ``..`` or ``./``, a symbolic or a hard link to it. Matched by
    the file itself (its device and inode, the links followed), not by the path's words;
    the inputs whose spelling is the writer's own are the plain join of ``tick_reads`` and
    ``tick_outputs`` on the asset, and are not repeated here. One rule for gather (what
    reads as approved, `upstream_inputs`) and the tick (what wakes on an approval only,
    in which order: `heinzel.tick.plan.Planner`). A file not there yet matches nothing.
    ``reads``: the rows of `ALIASABLE` when the caller asked for them in a query of its
    own (the tick's, which costs an idle tick no statement more)."""
    if reads is None:
        marks = ", ".join("?" for _ in readers or ())
        among = "" if readers is None else f" AND r.heinzel IN ({marks})"
        reads = db.execute(ALIASABLE + among, list(readers or ())).fetchall()
    if not reads:
        return []
    identity = functools.cache(_identity)  # a file many read is looked at once
    written: dict[tuple[int, int], list[tuple[str, str]]] = {}
    for writer, output, asset in db.execute(
        f"SELECT heinzel, output, asset FROM tick_outputs WHERE {local('asset')}"  # noqa: S608
    ).fetchall():
        same = identity(str(asset))
        if same is not None:
            written.setdefault(same, []).append((str(writer), str(output)))
    found = []
    for reader, name, asset in reads if written else ():
        for writer, output in written.get(identity(str(asset)) or (-1, -1), ()):
            if writer != reader:
                found.append((str(reader), str(name), writer, output))
    return found


def _identity(asset: str) -> tuple[int, int] | None:
    """A local document's device and inode (links followed); None when it is not there."""
    try:
        info = os.stat(os.path.expanduser(asset.removeprefix("file:")))
    except (OSError, ValueError):  # not there (yet), or no path (a NUL in it)
        return None
    return info.st_dev, info.st_ino


def pending_draft(db: Database, heinzel: str, output: str) -> str | None:
    """The key of ``heinzel``'s latest pending draft of ``output`` (None: none)."""
    row = db.execute(
        "SELECT key FROM drafts WHERE heinzel = ? AND output = ? AND state = 'pending' "
        "ORDER BY placed_at DESC LIMIT 1",
        [heinzel, output],
    ).fetchone()
    return None if row is None else str(row[0])


def unanswered(db: Database, heinzel: str) -> str:
    """How ``heinzel``'s contract ends a question unanswered at ``max_wait``:
    ``fall-back`` (the default) or ``abandon``."""
    row = db.execute("SELECT unanswered FROM tick_users WHERE heinzel = ?", [heinzel]).fetchone()
    return str(row[0]) if row and row[0] else "fall-back"
