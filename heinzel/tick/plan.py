"""What is due at a tick, asked of the index alone (never a spine).

`Planner.due(now)` answers with a handful of queries whatever the number of
Heinzelmännchen: schedule slots whose ``next_due`` passed, waiting turns, placed
drafts (whose state the documents adapter then reads), approved outputs past their
``valid_until``, turns left running by a dead process, the sources whose recheck is due
(one row each, grouped in SQL, however many Heinzelmännchen watch them), and the inputs
of those due anyway (so gather reads them staged). After a poll, `Planner.watchers`
names only the watchers a source's answer concerns: those it wakes and those it failed.
Retired and paused ones (``hold``) are never asked for. The follow-up queries (keys already taken,
spend today, graph height) run only when something is due.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from heinzel.index.flow import ALIASABLE, aliased_reads, local
from heinzel.index.seen import SEEN_STATE, record_seen
from ledger.event import format_ts
from ledger.index import write_transaction
from ledger.records import frozen_record, mutable_record
from machines import keys
from machines.core.waits import PendingWait

if TYPE_CHECKING:
    from sqlite_utils import Database

__all__ = ["TICK_STATE", "Due", "InputRow", "Planner", "SourceRow", "latest_slot"]

TICK_STATE = SEEN_STATE
"""The tick's own bookkeeping beside the derived tables: the fingerprint each watcher's
last woken turn was handed (with ``tick_sources``, when each source is next polled). Losing
it (a new index file) costs a cache read and at most one render if-moved would have
skipped."""


@frozen_record
class InputRow:
    """One watched input as the index holds it."""

    heinzel: str
    input: str
    capability: str
    method: str
    args: dict[str, Any]
    window_s: int | None
    recheck_s: int
    facet: str | None
    source_key: str
    last_seen: str | None
    scheduled: bool
    at_slot: bool = False
    """Its contract says ``source_changed: at-slot``: a move never wakes it."""


@frozen_record
class SourceRow:
    """One source whose recheck is due, once however many watch it: what to ask, and
    the shortest recheck among its watchers."""

    key: str
    capability: str
    method: str
    args: dict[str, Any]
    window_s: int | None
    recheck_s: int


@mutable_record
class Due:
    """Everything the index says is due at one tick."""

    slots: list[dict[str, Any]] = field(default_factory=list)
    waits: list[tuple[str, PendingWait]] = field(default_factory=list)
    drafts: list[dict[str, Any]] = field(default_factory=list)
    stale: list[dict[str, Any]] = field(default_factory=list)
    running: list[dict[str, Any]] = field(default_factory=list)
    inputs: list[InputRow] = field(default_factory=list)
    sources: list[SourceRow] = field(default_factory=list)


def latest_slot(schedule: str, timezone: str | None, due: datetime, now: datetime) -> datetime:
    """The latest slot at or before ``now``, starting from the first missed one ``due``:
    a laptop that slept through three Fridays renders once, for the last."""
    from heinzel.contract.schedule import next_slot  # croniter: only with a slot due

    slot = due
    for _ in range(10_000):
        following = next_slot(schedule, timezone, slot)
        if following is None or following > now:
            return slot
        slot = following
    return slot


class Planner:
    """The tick's queries over one index database."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.db.executescript(TICK_STATE)

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        cursor = self.db.execute(sql, list(params))
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def due(self, now: datetime) -> Due:
        """One pass of the tick's questions at ``now``."""
        at = format_ts(now)
        found = Due()
        found.slots = self._rows(
            "SELECT h.id, h.name, h.next_due, h.schedule, h.timezone FROM heinzel h "
            "WHERE h.next_due <= ? AND "
            "h.hold IS NULL AND h.contract_version IS NOT NULL ORDER BY h.next_due",
            [at],
        )
        for row in self._rows(
            "SELECT w.turn, w.heinzel, w.step, w.until, w.wait_on, tw.seq, tw.output "
            "FROM waits w JOIN heinzel h ON h.id = w.heinzel "
            "LEFT JOIN tick_waits tw ON tw.turn = w.turn WHERE "
            "h.hold IS NULL AND h.contract_version IS NOT NULL"
        ):
            found.waits.append(
                (
                    row["heinzel"],
                    PendingWait(
                        turn=row["turn"],
                        step=row["step"] or "",
                        until=row["until"] or at,
                        seq=int(row["seq"] or 0),
                        on=json.loads(row["wait_on"]) if row["wait_on"] else None,
                        output=row["output"],
                    ),
                )
            )
        found.drafts = self._rows(
            "SELECT d.key, d.heinzel, d.output, d.hash, d.asset, d.placed_at FROM drafts d "
            "JOIN heinzel h ON h.id = d.heinzel WHERE d.state = 'pending' AND "
            "h.hold IS NULL AND h.contract_version IS NOT NULL "
            "ORDER BY d.placed_at"
        )
        found.stale = self._rows(
            "SELECT c.key, c.heinzel, c.output, c.valid_until FROM tick_decisions c "
            "JOIN heinzel h ON h.id = c.heinzel JOIN drafts d ON d.key = c.key "
            "WHERE c.state = 'approved' AND c.valid_until <= ? AND "
            "h.hold IS NULL AND h.contract_version IS NOT NULL "
            "AND NOT EXISTS (SELECT 1 FROM drafts n WHERE n.heinzel = d.heinzel "
            "AND n.output = d.output AND n.placed_at > d.placed_at)",
            [at],
        )
        found.running = self._rows(
            "SELECT t.id, t.heinzel, t.started_at FROM turns t JOIN heinzel h "
            "ON h.id = t.heinzel WHERE t.state = 'running' AND "
            "h.hold IS NULL AND h.contract_version IS NOT NULL"
        )
        found.sources = [
            SourceRow(
                key=r["source_key"],
                capability=r["capability"],
                method=r["method"],
                args=json.loads(r["args"]),
                window_s=r["window_s"],
                recheck_s=int(r["recheck"] or 0),
            )
            for r in self._rows(
                # one row per source whose recheck is due, however many watch it: its
                # watcher of the shortest recheck, found by `tick_inputs_recheck` in
                # recheck order (the first active one, not every watcher of the source)
                "SELECT i.source_key, i.capability, i.method, i.args, i.window_s, "
                "i.recheck_s AS recheck FROM tick_sources c "
                "JOIN tick_inputs i ON i.rowid = (SELECT f.rowid FROM tick_inputs f "
                "JOIN heinzel h ON h.id = f.heinzel WHERE f.source_key = c.key AND "
                "h.hold IS NULL AND h.contract_version IS NOT NULL "
                "ORDER BY f.recheck_s, f.rowid LIMIT 1) "
                # a next check further off than its recheck was set by a clock ahead of
                # this one (a future HZ_NOW): due now, or polling would freeze until then
                "WHERE c.next_check <= ? OR "
                "julianday(c.next_check) > julianday(?) + i.recheck_s / 86400.0 "
                "ORDER BY c.key",
                [at, at],
            )
        ]
        found.inputs = self._inputs(
            # the inputs of those due anyway (a slot, a wait), so gather reads them staged
            "WITH due(heinzel) AS (SELECT h.id FROM heinzel h WHERE h.next_due <= ? "
            "UNION SELECT w.heinzel FROM waits w) "
            "SELECT i.*, h.schedule, s.fingerprint FROM due "
            "JOIN tick_inputs i ON i.heinzel = due.heinzel "
            "JOIN heinzel h ON h.id = i.heinzel "
            "LEFT JOIN tick_seen s ON s.heinzel = i.heinzel AND s.input = i.input "
            "WHERE h.hold IS NULL AND h.contract_version IS NOT NULL",
            [at],
        )
        return found

    def _inputs(self, sql: str, params: Sequence[Any]) -> list[InputRow]:
        return [
            InputRow(
                heinzel=r["heinzel"],
                input=r["input"],
                capability=r["capability"],
                method=r["method"],
                args=json.loads(r["args"]),
                window_s=r["window_s"],
                recheck_s=int(r["recheck_s"] or 0),
                facet=r["facet"],
                source_key=r["source_key"],
                last_seen=r["fingerprint"],
                scheduled=bool(r["schedule"]),
                at_slot=bool(r["at_slot"]),
            )
            for r in self._rows(sql, params)
        ]

    # -- follow-ups, only when something is due ------------------------------------

    def watchers(
        self, key: str, fingerprints: Mapping[str, str] | None, whole: str | None
    ) -> list[InputRow]:
        """The watchers of source ``key`` the tick must hear of after polling it: with
        ``fingerprints`` (its fresh or staged facets and ``whole`` fingerprint), those it
        wakes (what they last saw differs; one with a schedule only once a turn of it saw
        the input, its first look being its slot, and never one whose contract says
        ``source_changed: at-slot``) and those watching a facet it does not have (their
        error); without (the source failed), every watcher."""
        sql = (
            "SELECT i.*, h.schedule, s.fingerprint FROM tick_inputs i "
            "JOIN heinzel h ON h.id = i.heinzel "
            "LEFT JOIN tick_seen s ON s.heinzel = i.heinzel AND s.input = i.input "
            "WHERE i.source_key = ? AND h.hold IS NULL AND h.contract_version IS NOT NULL"
        )
        if fingerprints is None:
            return self._inputs(sql, [key])
        facets = json.dumps(dict(fingerprints))
        facet = "json_extract(?, '$.' || json_quote(i.facet))"
        current = f"CASE WHEN i.facet IS NULL THEN ? ELSE {facet} END"
        return self._inputs(
            f"{sql} AND ((i.facet IS NOT NULL AND {facet} IS NULL) OR "
            f"(i.at_slot = 0 AND s.fingerprint IS NOT {current} AND "
            "(COALESCE(h.schedule, '') = '' OR s.fingerprint IS NOT NULL)))",
            [key, facets, whole, facets],
        )

    def taken(self, keys: Iterable[str]) -> dict[str, str]:
        """The state of the turn each key already has (``running``, ``waiting``,
        ``finished``, ``skipped``), ``steered`` for a chat's key a turn was steered with,
        or ``observed`` for an approval key whose rejection
        was recorded without a turn (`heinzel.turns.approval.observe_rejection`) and the
        draft it names is no longer pending; keys with neither are absent. So a
        handed approval wake of a rejected draft is taken, not woken every tick."""
        wanted = sorted(set(keys))
        if not wanted:
            return {}
        marks = ", ".join("?" for _ in wanted)
        rows = self.db.execute(
            f"SELECT j.value, t.state FROM turns t, json_each(t.keys) j "  # noqa: S608
            f"WHERE j.value IN ({marks})",
            wanted,
        ).fetchall()
        states: dict[str, str] = {}
        for key, state in rows:
            if states.get(key) not in ("finished", "skipped"):
                states[key] = state
        steered = self.db.execute(
            f"SELECT DISTINCT key FROM keys WHERE kind = 'turn.steered' "  # noqa: S608
            f"AND key IN ({marks})",
            wanted,
        ).fetchall()
        for (key,) in steered:
            states.setdefault(key, "steered")  # a chat delivered into a turn: never its own
        observed = self.db.execute(
            f"SELECT DISTINCT key FROM keys WHERE kind = 'approval.observed' "  # noqa: S608
            f"AND key IN ({marks})",
            wanted,
        ).fetchall()
        for (key,) in observed:
            if key not in states and not self._pending_draft_of(str(key)):
                states[key] = "observed"  # a rejection recorded, no draft of it left to decide
        return states

    def _pending_draft_of(self, approval_key: str) -> bool:
        """Whether the draft this approval key names is still pending (a key of the older
        form, by the text's hash: any pending draft of that text), its decision to come."""
        heinzel, output, _ = keys.approval_parts(approval_key)
        rows = self.db.execute(
            "SELECT key, hash FROM drafts WHERE heinzel = ? AND output = ? AND state = 'pending'",
            [heinzel, output],
        ).fetchall()
        return any(keys.approval_names(approval_key, str(k), h) for k, h in rows)

    def answers(self, heinzel_ids: Iterable[str]) -> frozenset[str]:
        """Answered question keys of these Heinzelmännchen."""
        ids = sorted(set(heinzel_ids))
        if not ids:
            return frozenset()
        marks = ", ".join("?" for _ in ids)
        rows = self.db.execute(
            f"SELECT key FROM tick_answers WHERE heinzel IN ({marks})",  # noqa: S608
            ids,
        ).fetchall()
        return frozenset(r[0] for r in rows)

    def latest_drafts(self, heinzel_id: str) -> dict[str, tuple[str, int]]:
        """The latest draft per output of one Heinzelmännchen, as (turn, seq)."""
        rows = self.db.execute(
            "SELECT output, turn, seq FROM tick_drafts WHERE heinzel = ?", [heinzel_id]
        ).fetchall()
        return {r[0]: (r[1], int(r[2])) for r in rows}

    def turn_cap(self, heinzel_id: str) -> float | None:
        """The contract's ``agent.max_usd``, if it sets one."""
        row = self.db.execute(
            "SELECT frontmatter FROM heinzel WHERE id = ?", [heinzel_id]
        ).fetchone()
        value = json.loads(row[0]).get("hz.agent.max_usd") if row and row[0] else None
        return float(value) if value is not None else None

    def noticed(self, reason: str, day: str) -> bool:
        """Whether the user was already told of ``reason`` on ``day``."""
        row = self.db.execute(
            "SELECT 1 FROM tick_notices WHERE reason = ? AND day = ? LIMIT 1", [reason, day]
        ).fetchone()
        return row is not None

    def heights(self, heinzel_ids: Sequence[str]) -> dict[str, int]:
        """Graph height among ``heinzel_ids``: 0 for one no other due one feeds, else one
        more than the highest that writes an asset it reads, however the reader spells a
        local document (`heinzel.index.flow.aliased_reads`; cycles are cut)."""
        ids = sorted(set(heinzel_ids))
        if len(ids) < 2:
            return dict.fromkeys(ids, 0)
        marks = ", ".join("?" for _ in ids)
        writes: dict[str, set[str]] = {}
        for heinzel, asset in self.db.execute(
            f"SELECT heinzel, asset FROM tick_outputs WHERE heinzel IN ({marks})",  # noqa: S608
            ids,
        ).fetchall():
            writes.setdefault(str(asset), set()).add(heinzel)
        reads: dict[str, set[str]] = {}
        for heinzel, capability, method, args in self.db.execute(
            f"SELECT heinzel, capability, method, args FROM tick_inputs "  # noqa: S608
            f"WHERE heinzel IN ({marks})",
            ids,
        ).fetchall():
            asset = _read_asset(capability, method, json.loads(args))
            for writer in writes.get(asset or "", ()):
                if writer != heinzel:
                    reads.setdefault(heinzel, set()).add(writer)
        for heinzel, _, writer, _ in aliased_reads(self.db, ids):  # another spelling of it
            if writer in ids:
                reads.setdefault(heinzel, set()).add(writer)
        memo: dict[str, int] = {}

        def height(node: str, path: frozenset[str]) -> int:
            if node not in memo:
                ups = [u for u in reads.get(node, ()) if u not in path]
                memo[node] = 1 + max((height(u, path | {node}) for u in ups), default=-1)
            return memo[node]

        return {i: height(i, frozenset()) for i in ids}

    def approved_upstream(self) -> list[dict[str, Any]]:
        """Readers of another one's output, each with that output's last approved
        fingerprint (docs/graph.md, "Downstream wakes follow approved output only"); one
        with a schedule only once a turn of it read the input (its first look is its
        slot), none whose contract says ``source_changed: at-slot``; rows a turn already
        took are the tick's to drop by key. Asked from the reads of an asset (``CROSS
        JOIN`` keeps SQLite's order): left to itself it scanned every input of every
        Heinzelmännchen, asleep or not, each tick. A reader naming the document another
        way (`heinzel.index.flow.aliased_reads`) is one of them too: the reads that may
        be one are asked in the same statement (``spelled`` 0), only while some local
        document has an approved text."""
        spelled = _APPROVED.format(match="o.asset = r.asset AND o.heinzel != r.heinzel")
        rows = self.db.execute(
            f"SELECT 1, heinzel, input, output_fp, at FROM ({spelled}) UNION ALL "  # noqa: S608
            f"SELECT 0, heinzel, input, asset, NULL FROM ({ALIASABLE}) WHERE EXISTS "
            "(SELECT 1 FROM tick_outputs o CROSS JOIN tick_approved a ON a.heinzel = o.heinzel "
            f"AND a.output = o.output WHERE {local('o.asset')})"
        ).fetchall()
        fields = ("heinzel", "input", "output_fp", "at")
        found = [dict(zip(fields, row[1:], strict=True)) for row in rows if row[0]]
        reads = [(str(row[1]), str(row[2]), str(row[3])) for row in rows if not row[0]]
        for reader, name, writer, output in aliased_reads(self.db, reads=reads):
            match = "o.heinzel = ? AND o.output = ? AND r.heinzel = ? AND r.input = ?"
            found += self._rows(_APPROVED.format(match=match), [writer, output, reader, name])
        return sorted(found, key=lambda r: (r["at"] or "", r["heinzel"], r["input"]))

    def reads_upstream(self, heinzel: str, input_name: str) -> bool:
        """Whether this input reads another Heinzelmännchen's output, however it spells
        a local document (it then wakes on that output's approvals, never on the file's
        every change: a pending draft moves the file too)."""
        row = self.db.execute(
            "SELECT 1 FROM tick_reads r JOIN tick_outputs o ON o.asset = r.asset "
            "AND o.heinzel != r.heinzel WHERE r.heinzel = ? AND r.input = ? LIMIT 1",
            [heinzel, input_name],
        ).fetchone()
        return row is not None or any(
            read[1] == input_name for read in aliased_reads(self.db, [heinzel])
        )

    # -- the tick's own bookkeeping --------------------------------------------------

    def checked(self, keys_next: Iterable[tuple[str, str]]) -> None:
        """Record when each polled source is next due (committed at once)."""
        with write_transaction(self.db):
            self.db.conn.executemany(
                "INSERT OR REPLACE INTO tick_sources VALUES (?, ?)", [list(k) for k in keys_next]
            )

    def seen(self, rows: Iterable[tuple[str, str, str]]) -> None:
        """Record the fingerprint each woken watcher was handed, per input."""
        record_seen(self.db, rows)


_APPROVED = (
    "SELECT r.heinzel, r.input, a.output_fp, a.at FROM tick_reads r "
    "CROSS JOIN tick_outputs o ON {match} "
    "CROSS JOIN tick_approved a ON a.heinzel = o.heinzel AND a.output = o.output "
    "CROSS JOIN heinzel h ON h.id = r.heinzel "
    "CROSS JOIN tick_inputs i ON i.heinzel = r.heinzel AND i.input = r.input "
    "LEFT JOIN tick_seen s ON s.heinzel = r.heinzel AND s.input = r.input "
    "WHERE (r.scheduled = 0 OR s.fingerprint IS NOT NULL) AND i.at_slot = 0 "
    "AND h.hold IS NULL "
    "AND h.contract_version IS NOT NULL ORDER BY a.at, r.heinzel, r.input"
)
"""`Planner.approved_upstream`'s query; ``match``: which output a read reads."""


def _read_asset(capability: str, method: str, args: dict[str, Any]) -> str | None:
    """The asset an input reads (paths in the index are absolute already)."""
    if (capability, method) == ("documents", "read") and args.get("doc"):
        return str(args["doc"])
    if (capability, method) == ("files", "read") and args.get("path"):
        return "file:" + str(args["path"])
    return None
