"""The index's rows the tick asks: watched inputs, outputs, decisions, waits, notices.

A second projection beside `heinzel.index.projection.HeinzelProjection`, folded from the
same spine events and rebuilt with them, so the tick answers "what is due" with a few
queries that never open a spine (ADR 0049 statements 9 and 20):

- ``tick_inputs``: each watched input of the approved contract (capability, method,
  args made absolute against the contract's folder, window, recheck, facet), its
  source key and ``at_slot`` (a scheduled contract's ``source_changed: at-slot``: a move
  never wakes it);
- ``tick_outputs``: each output's ``valid_for``;
- ``tick_reads``: each input that reads a document or file, by its asset ref, so the
  tick finds the readers of another's output by an index lookup (docs/graph.md);
- ``tick_approved``: each output's last approved text's fingerprint (``output_fp``, the
  ``approved_fp`` of ``approval.observed``), which its readers wake on;
- ``tick_decisions``: each approved or rejected draft, and when an approved one goes
  stale (``valid_until`` = approval time + the output's ``valid_for``);
- ``tick_waits``: the seq and output of each ``turn.waiting`` (for supersession);
- ``tick_drafts``: the latest draft per output as (turn, seq);
- ``tick_answers``: answered question keys; ``tick_notices``: notices, once per key;
- ``tick_sources``: when each source is next polled. A source gets its row, due at once,
  when a contract naming it is approved; the tick moves it on and keeps it across a
  rebuild (it is not a derived row, and losing it costs one refetch);
- ``tick_needs``: each input's ``needed_by`` (the asset it reads, the deadline rule in the
  contract's timezone, the nudges' lead times, the escalation); ``tick_users``: whose each
  Heinzelmännchen is (its contract's ``owner``) and how its unanswered questions end;
  ``tick_approved`` (above) gives a fallback its input's last approval; ``tick_flow``: the
  flow's notices with their message (`heinzel.index.flow`);
- ``tick_superseded``: the superseded drafts whose section the tick already read once
  (`heinzel.tick.superseded`); bookkeeping like ``tick_sources``, a rebuild reads them again.

It also advances ``heinzel.next_due`` past a schedule slot once a turn started or was
skipped for it, so a slot is asked for once.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from heinzel.capabilities.documents import absolute_asset
from heinzel.store.home import Home
from heinzel.store.sources import absolute_args, source_key
from ledger.event import Event, format_ts, parse_ts
from machines.stores.journal import expand_carried

if TYPE_CHECKING:
    from sqlite_utils import Database

__all__ = ["FLOW_REASONS", "TICK_SCHEMA", "TickProjection", "read_asset"]

TICK_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS tick_origins (heinzel TEXT PRIMARY KEY, origin TEXT);
CREATE TABLE IF NOT EXISTS tick_inputs (
    heinzel TEXT NOT NULL, input TEXT NOT NULL, capability TEXT NOT NULL, method TEXT NOT NULL,
    args TEXT NOT NULL, window_s INTEGER, recheck_s INTEGER NOT NULL DEFAULT 0, facet TEXT,
    source_key TEXT NOT NULL, at_slot INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (heinzel, input)
);
CREATE INDEX IF NOT EXISTS tick_inputs_key ON tick_inputs(source_key);
CREATE INDEX IF NOT EXISTS tick_inputs_recheck ON tick_inputs(source_key, recheck_s);
CREATE TABLE IF NOT EXISTS tick_outputs (
    heinzel TEXT NOT NULL, output TEXT NOT NULL, asset TEXT, valid_for_s INTEGER,
    PRIMARY KEY (heinzel, output)
);
CREATE INDEX IF NOT EXISTS tick_outputs_asset ON tick_outputs(asset);
CREATE TABLE IF NOT EXISTS tick_reads (
    heinzel TEXT NOT NULL, input TEXT NOT NULL, asset TEXT NOT NULL, scheduled INTEGER,
    PRIMARY KEY (heinzel, input)
);
CREATE INDEX IF NOT EXISTS tick_reads_asset ON tick_reads(asset);
CREATE TABLE IF NOT EXISTS tick_approved (
    heinzel TEXT NOT NULL, output TEXT NOT NULL, output_fp TEXT NOT NULL, at TEXT,
    PRIMARY KEY (heinzel, output)
);
CREATE TABLE IF NOT EXISTS tick_decisions (
    key TEXT PRIMARY KEY, heinzel TEXT NOT NULL, output TEXT, state TEXT NOT NULL,
    at TEXT, valid_until TEXT
);
CREATE INDEX IF NOT EXISTS tick_decisions_until ON tick_decisions(valid_until);
CREATE TABLE IF NOT EXISTS tick_waits (
    turn TEXT PRIMARY KEY, heinzel TEXT NOT NULL, seq INTEGER, output TEXT
);
CREATE TABLE IF NOT EXISTS tick_drafts (
    heinzel TEXT NOT NULL, output TEXT NOT NULL, turn TEXT, seq INTEGER,
    PRIMARY KEY (heinzel, output)
);
CREATE TABLE IF NOT EXISTS tick_answers (key TEXT PRIMARY KEY, heinzel TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tick_notices (
    key TEXT PRIMARY KEY, heinzel TEXT NOT NULL, reason TEXT, day TEXT, at TEXT
);
CREATE INDEX IF NOT EXISTS tick_notices_day ON tick_notices(reason, day);
CREATE TABLE IF NOT EXISTS tick_sources (key TEXT PRIMARY KEY, next_check TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tick_superseded (key TEXT PRIMARY KEY, checked_at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS tick_sources_next ON tick_sources(next_check);
CREATE TABLE IF NOT EXISTS tick_needs (
    heinzel TEXT NOT NULL, input TEXT NOT NULL, asset TEXT NOT NULL, at TEXT NOT NULL,
    timezone TEXT, nudge TEXT NOT NULL, escalate_after_s INTEGER, escalate_to TEXT,
    PRIMARY KEY (heinzel, input)
);
CREATE INDEX IF NOT EXISTS tick_needs_asset ON tick_needs(asset);
CREATE TABLE IF NOT EXISTS tick_users (heinzel TEXT PRIMARY KEY, user TEXT, unanswered TEXT);
CREATE TABLE IF NOT EXISTS tick_flow (
    key TEXT PRIMARY KEY, heinzel TEXT NOT NULL, reason TEXT, message TEXT, at TEXT,
    until TEXT
);
CREATE INDEX IF NOT EXISTS tick_flow_heinzel ON tick_flow(heinzel, reason);
"""

TABLES: Final = (
    "tick_origins",
    "tick_inputs",
    "tick_outputs",
    "tick_reads",
    "tick_approved",
    "tick_decisions",
    "tick_waits",
    "tick_drafts",
    "tick_answers",
    "tick_notices",
    "tick_needs",
    "tick_users",
    "tick_flow",
)

FLOW_REASONS: Final = ("needed-by", "fell-back", "escalated")
"""The flow's notices (`heinzel.index.flow`), kept with their message and how long they
hold (``tick_flow``), so every surface shows them from the index."""


def read_asset(capability: str, method: str, args: dict[str, Any]) -> str | None:
    """The asset an input reads (``documents.read``'s doc, ``files.read``'s path), None
    for a source that is no asset."""
    if (capability, method) == ("documents", "read") and args.get("doc"):
        return str(args["doc"])
    if (capability, method) == ("files", "read") and args.get("path"):
        return "file:" + str(args["path"])
    return None


def _seconds(value: Any) -> int | None:
    if value is None:
        return None
    # folding a contract's line loads the contract's types (and pydantic): an idle tick
    # folds none
    from heinzel.contract.types import parse_duration

    return int(parse_duration(value).total_seconds())


class TickProjection:
    """Folds the events the tick needs into the ``tick_*`` tables."""

    name = "tick"

    def __init__(self, home: Home) -> None:
        self._home = home
        self._handlers: dict[str, Callable[[Database, str, Event], None]] = {
            "heinzel.created": self._created,
            "contract.approved": self._contract,
            "contract.amended": self._contract,
            "turn.started": self._slot,
            "turn.skipped": self._slot,
            "turn.waiting": self._waiting,
            "draft.placed": self._draft,
            "approval.observed": self._decided,
            "question.answered": self._answered,
            "notice.posted": self._notice,
        }

    def create(self, db: Database) -> None:
        db.executescript(TICK_SCHEMA)
        columns = {row[1] for row in db.execute("PRAGMA table_info(tick_inputs)").fetchall()}
        if "at_slot" not in columns:  # an index made before ``source_changed``: every
            # contract then had the default (an input that moved wakes it)
            db.execute("ALTER TABLE tick_inputs ADD COLUMN at_slot INTEGER NOT NULL DEFAULT 0")

    def clear(self, db: Database, source: str) -> None:
        for table in TABLES:
            db.execute(f"DELETE FROM {table} WHERE heinzel = ?", [source])  # noqa: S608

    def apply(self, db: Database, source: str, event: Event) -> None:
        for one in expand_carried((event,)):  # a draft placed a line carries, too
            handler = self._handlers.get(one.kind)
            if handler is not None:
                handler(db, source, one)

    # -- handlers ----------------------------------------------------------------

    def _created(self, db: Database, source: str, event: Event) -> None:
        db.execute(
            "INSERT OR REPLACE INTO tick_origins VALUES (?, ?)", [source, event.data.get("origin")]
        )

    def _contract(self, db: Database, source: str, event: Event) -> None:
        """The approved version's inputs and outputs, read from its compiled form."""
        from heinzel.contract.types import parse_duration

        path = self._home.contract_json_path(source, int(event.data["version"]))
        hz = json.loads(path.read_text(encoding="utf-8"))["compiled"]["frontmatter"]["hz"]
        found = db.execute("SELECT origin FROM tick_origins WHERE heinzel = ?", [source]).fetchone()
        base = Path(found[0]) if found and found[0] else Path.cwd()
        db.execute("DELETE FROM tick_inputs WHERE heinzel = ?", [source])
        db.execute("DELETE FROM tick_outputs WHERE heinzel = ?", [source])
        db.execute("DELETE FROM tick_reads WHERE heinzel = ?", [source])
        db.execute("DELETE FROM tick_needs WHERE heinzel = ?", [source])
        db.execute(
            "INSERT OR REPLACE INTO tick_users VALUES (?, ?, ?)",
            [source, hz.get("owner"), hz.get("unanswered") or "fall-back"],
        )
        for name, spec in hz.get("inputs", {}).items():
            capability, _, method = str(spec["from"]).partition(".")
            args = absolute_args(capability, method, spec.get("args") or {}, base)
            window = parse_duration(spec["window"]) if spec.get("window") else None
            key = source_key(capability, method, args, window)
            db.execute(
                "INSERT INTO tick_inputs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    source,
                    name,
                    capability,
                    method,
                    json.dumps(args, sort_keys=True),
                    _seconds(spec.get("window")),
                    _seconds(spec.get("recheck")) or 0,
                    spec.get("facet"),
                    key,
                    1 if hz.get("schedule") and hz.get("source_changed") == "at-slot" else 0,
                ],
            )
            read = read_asset(capability, method, args)
            if read is not None:
                db.execute(
                    "INSERT INTO tick_reads VALUES (?, ?, ?, ?)",
                    [source, name, read, 1 if hz.get("schedule") else 0],
                )
            # a source not polled yet is due at once; the tick moves next_check on
            db.execute("INSERT OR IGNORE INTO tick_sources VALUES (?, '')", [key])
            need = spec.get("needed_by")
            asset = read_asset(capability, method, args)
            if need and asset:
                escalate = need.get("escalate") or {}
                db.execute(
                    "INSERT INTO tick_needs VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        source,
                        name,
                        asset,
                        need["at"],
                        hz.get("timezone") or "UTC",
                        json.dumps([_seconds(n) for n in need.get("nudge") or []]),
                        _seconds(escalate.get("after")),
                        escalate.get("to"),
                    ],
                )
        for name, spec in hz.get("outputs", {}).items():
            db.execute(
                "INSERT INTO tick_outputs VALUES (?, ?, ?, ?)",
                [
                    source,
                    name,
                    absolute_asset(str(spec["asset"]), base),
                    _seconds(spec.get("valid_for")),
                ],
            )

    def _slot(self, db: Database, source: str, event: Event) -> None:
        """A schedule cause's slot is taken: the next one is due after it."""
        causes = event.data.get("causes") or [{"cause": event.data.get("cause"), "key": event.key}]
        slots = [
            str(c.get("key", "")).partition("@")[2]
            for c in causes
            if isinstance(c, dict) and c.get("cause") == "schedule"
        ]
        row = db.execute(
            "SELECT schedule, timezone, next_due FROM heinzel WHERE id = ?", [source]
        ).fetchone()
        if not slots or row is None or not row[0]:
            return
        try:
            latest = max(parse_ts(slot) for slot in slots)
        except ValueError:
            return
        from heinzel.contract.schedule import next_slot  # croniter: by need

        following = next_slot(row[0], row[1], latest)
        if following is not None and (row[2] is None or format_ts(following) > row[2]):
            db.execute(
                "UPDATE heinzel SET next_due = ? WHERE id = ?", [format_ts(following), source]
            )

    def _waiting(self, db: Database, source: str, event: Event) -> None:
        db.execute(
            "INSERT OR REPLACE INTO tick_waits VALUES (?, ?, ?, ?)",
            [event.turn, source, event.seq, event.data.get("output")],
        )

    def _draft(self, db: Database, source: str, event: Event) -> None:
        output = event.data.get("output")
        if output:
            db.execute(
                "INSERT OR REPLACE INTO tick_drafts VALUES (?, ?, ?, ?)",
                [source, output, event.turn, event.seq],
            )

    def _decided(self, db: Database, source: str, event: Event) -> None:
        key = event.data.get("draft_key") or event.data.get("draft") or event.key
        found = db.execute(
            "SELECT d.output, o.valid_for_s FROM drafts d LEFT JOIN tick_outputs o "
            "ON o.heinzel = d.heinzel AND o.output = d.output WHERE d.key = ?",
            [key],
        ).fetchone()
        output, valid_for = (found[0], found[1]) if found else (None, None)
        rejected = bool(event.data.get("rejected"))
        until = None
        if not rejected and valid_for:
            until = format_ts(parse_ts(event.ts) + timedelta(seconds=int(valid_for)))
        db.execute(
            "INSERT OR REPLACE INTO tick_decisions VALUES (?, ?, ?, ?, ?, ?)",
            [key, source, output, "rejected" if rejected else "approved", event.ts, until],
        )
        approved_fp = event.data.get("output_fp") or event.data.get("approved_fp")
        if output and not rejected and approved_fp:
            db.execute(
                "INSERT OR REPLACE INTO tick_approved VALUES (?, ?, ?, ?)",
                [source, output, str(approved_fp), event.ts],
            )

    def _answered(self, db: Database, source: str, event: Event) -> None:
        if event.key:
            db.execute("INSERT OR IGNORE INTO tick_answers VALUES (?, ?)", [event.key, source])

    def _notice(self, db: Database, source: str, event: Event) -> None:
        db.execute(
            "INSERT OR IGNORE INTO tick_notices VALUES (?, ?, ?, ?, ?)",
            [event.key, source, event.data.get("reason"), event.data.get("day"), event.ts],
        )
        if event.data.get("reason") in FLOW_REASONS:
            db.execute(
                "INSERT OR IGNORE INTO tick_flow VALUES (?, ?, ?, ?, ?, ?)",
                [
                    event.key,
                    source,
                    event.data.get("reason"),
                    event.data.get("message"),
                    event.ts,
                    event.data.get("until"),
                ],
            )
