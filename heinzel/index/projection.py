"""The index's rows, each derived from spine events (ADR 0049 statement 7).

One row per Heinzelmännchen and rows per turn, draft, lesson, amendment and wait.
`HeinzelProjection.apply` is a fold: one ``_apply_<kind>`` per event kind, every
other kind ignored. Rows hold no content. The only thing read besides the event
is the compiled contract a ``contract.*`` event names by version and fingerprint
(``contract/v<n>.json``, written before the event and never changed), from which
the row takes its assets, schedule, watched inputs and frontmatter keys.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from heinzel.index.schema import ADDED_COLUMNS, ADDED_TABLES, MARKED, SCHEMA, TABLES
from heinzel.store.contracts import ContractFacts, load_facts
from heinzel.store.home import Home
from heinzel.vocabulary import LIFECYCLE_KINDS
from ledger.event import Event, format_ts, parse_ts
from machines.stores.journal import expand_carried, keys_of, wake_causes, wake_keys
from machines.vocabulary import VOCABULARY_VERSION

if TYPE_CHECKING:
    from sqlite_utils import Database

__all__ = ["SCHEMA", "TABLES", "HeinzelProjection"]

TRIAL = "trial"
"""The ``kind`` of a trial's lines (`heinzel.turns.trial`): its reservations and releases
(``model.reserved``, ``model.released`` outside any turn) and its ``usage``."""
_TRIAL_ONLY = ("model.reserved", "model.released")
"""Kinds the projection folds only outside a turn, as a trial's (a turn's are its fold's)."""


class HeinzelProjection:
    """Projects one session's events into the index's tables."""

    name = "heinzel"

    def __init__(self, home: Home) -> None:
        self._home = home
        self._handlers: dict[str, Callable[[Database, str, Event], None]] = {
            kind: getattr(self, "_apply_" + kind.replace(".", "_"))
            for kind in (
                *LIFECYCLE_KINDS,
                "contract.amended",
                "amendment.declined",
                "turn.started",
                "turn.waiting",
                "turn.resumed",
                "turn.finished",
                "turn.skipped",
                "draft.placed",
                "effect.failed",
                "approval.observed",
                "lesson.recorded",
                "lesson.dismissed",
                "question.asked",
                "question.answered",
                "usage",
                *_TRIAL_ONLY,
            )
        }

    # -- the Projection protocol -------------------------------------------------

    def create(self, db: Database) -> None:
        added = [t for t in ADDED_TABLES if not _table_exists(db, t)]
        db.executescript(SCHEMA)
        have: dict[str, set[str]] = {}
        for table, column, kind in ADDED_COLUMNS:
            if table not in have:  # one look per table
                have[table] = {str(row[1]) for row in db.execute(f"PRAGMA table_info({table})")}
            if column not in have[table]:
                db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
        if "trials" in added:
            self._fill_trials(db)

    def _fill_trials(self, db: Database) -> None:
        """An index made before ``trials``: its rows from the trial lines the index already
        folded (up to each spine's watermark; the lines after are folded as they are
        caught up). Only the rows: the day's and the total spend counted those lines."""
        from ledger.index import WATERMARKS
        from ledger.reading import read_events

        if not _table_exists(db, WATERMARKS):
            return
        query = f"SELECT source, seq FROM {WATERMARKS}"  # noqa: S608
        for source, seq in db.execute(query).fetchall():
            spine = self._home.spine_path(str(source))
            if not spine.exists():
                continue
            kinds = ("usage", *_TRIAL_ONLY)
            for event in read_events(spine, kinds=kinds, skip_damaged=True):
                if event.seq > int(seq or 0):
                    break
                if event.turn is None and event.data.get("kind") == TRIAL:
                    self._trial(db, str(source), event)

    def clear(self, db: Database, source: str) -> None:
        db.execute("DELETE FROM heinzel WHERE id = ?", [source])
        for table in TABLES:
            db.execute(f"DELETE FROM {table} WHERE heinzel = ?", [source])  # noqa: S608

    def apply(self, db: Database, source: str, event: Event) -> None:
        """Fold one line: each event it carries (an effect's end, a step's start) first,
        as if it were a line of its own (`machines.stores.journal.expand_carried`); a key's row
        names the first of them that speaks for it (``effect.done`` for a carried end)."""
        rows: dict[str, str] = {}
        for one in expand_carried((event,)):
            for key in keys_of(one):
                rows.setdefault(key, one.kind)
        for key, kind in rows.items():
            db.execute(
                "INSERT OR REPLACE INTO keys VALUES (?, ?, ?, ?, ?)",
                [source, key, event.seq, event.offset, kind],
            )
        for one in expand_carried((event,)):
            self._apply_one(db, source, one)

    def _apply_one(self, db: Database, source: str, event: Event) -> None:
        if event.kind in MARKED:
            db.execute(
                "INSERT OR REPLACE INTO marks VALUES (?, ?, ?, ?)",
                [source, event.seq, event.offset, event.kind],
            )
        handler = self._handlers.get(event.kind)
        if handler is not None and not (event.turn and event.kind in _TRIAL_ONLY):
            handler(db, source, event)
            if event.kind != "heinzel.created":
                self._update(db, source, updated_at=event.ts)

    # -- helpers -----------------------------------------------------------------

    def _row(self, db: Database, source: str) -> dict[str, Any]:
        rows = list(db.query("SELECT * FROM heinzel WHERE id = ?", [source]))
        return rows[0] if rows else {}

    def _update(self, db: Database, source: str, **values: Any) -> None:
        if values:
            sets = ", ".join(f"{k} = ?" for k in values)
            db.execute(f"UPDATE heinzel SET {sets} WHERE id = ?", [*values.values(), source])  # noqa: S608

    def _settle(self, db: Database, source: str) -> None:
        """Recompute the shown state from hold, running turns and pending items."""
        row = self._row(db, source)
        if not row:
            return
        running = db.execute(
            "SELECT state FROM turns WHERE heinzel = ? AND state IN ('running', 'waiting')",
            [source],
        ).fetchall()
        pending = self._pending(db, source, row) or (
            self._question(db, source) if running else None
        )
        if row["contract_version"] is None:
            activity = "proposed"
        elif any(s == "running" for (s,) in running):
            activity = "awake"
        elif running or pending:
            activity = "waiting"
        else:
            activity = "asleep"
        state = row["hold"] or activity
        self._update(
            db,
            source,
            activity=activity,
            state=state,
            pending=json.dumps(pending) if pending else None,
        )

    def _pending(self, db: Database, source: str, row: dict[str, Any]) -> dict[str, Any] | None:
        if row["contract_version"] is None and row["proposed_version"] is not None:
            return {"kind": "approval", "ref": f"v{row['proposed_version']}"}
        for kind, sql in (
            ("amendment", "SELECT id FROM amendments WHERE heinzel = ? AND state = 'proposed'"),
            ("draft", "SELECT key FROM drafts WHERE heinzel = ? AND state = 'pending'"),
        ):
            found = db.execute(sql + " LIMIT 1", [source]).fetchone()
            if found:
                return {"kind": kind, "ref": found[0]}
        return None

    def _question(self, db: Database, source: str) -> dict[str, Any] | None:
        """A question a running or waiting turn asked that has no answer yet."""
        found = db.execute(
            "SELECT a.key FROM keys a WHERE a.heinzel = ? AND a.kind = 'question.asked' "
            "AND NOT EXISTS (SELECT 1 FROM keys b WHERE b.heinzel = a.heinzel "
            "AND b.key = a.key AND b.kind = 'question.answered') ORDER BY a.seq LIMIT 1",
            [source],
        ).fetchone()
        return {"kind": "question", "ref": found[0]} if found else None

    def _facts(self, source: str, event: Event) -> ContractFacts:
        return load_facts(
            self._home, source, int(event.data["version"]), str(event.data["fingerprint"])
        )

    def _take_contract(self, db: Database, source: str, event: Event, *, approved: bool) -> None:
        """The row's contract facts; only an approved version sets version and next due."""
        facts = self._facts(source, event)
        values: dict[str, Any] = {
            "contract_name": facts.name,
            "assets": json.dumps(facts.assets),
            "frontmatter": json.dumps(facts.frontmatter, sort_keys=True),
            "schedule": facts.schedule,
            "timezone": facts.timezone,
            "watched": json.dumps(dict.fromkeys(facts.inputs)),
        }
        if approved:
            from heinzel.contract.schedule import next_slot  # croniter: by need

            due = next_slot(facts.schedule, facts.timezone, parse_ts(event.ts))
            values.update(
                contract_version=facts.version, fingerprint=facts.fingerprint, next_due=_iso(due)
            )
        else:
            values.update(proposed_version=facts.version)
        self._update(db, source, **values)
        db.execute("DELETE FROM heinzel_assets WHERE heinzel = ?", [source])
        for asset in facts.assets:
            db.execute("INSERT OR IGNORE INTO heinzel_assets VALUES (?, ?)", [source, asset])

    def _add_cost(self, db: Database, source: str, event: Event, usd: float) -> None:
        if not usd:
            return
        row = self._row(db, source)
        day = event.ts[:10]
        today = (row["cost_today"] if row["cost_day"] == day else 0.0) + usd
        self._update(db, source, cost_day=day, cost_today=today, cost_total=row["cost_total"] + usd)

    # -- lifecycle ---------------------------------------------------------------

    def _apply_heinzel_created(self, db: Database, source: str, event: Event) -> None:
        d = event.data
        db.execute(
            "INSERT OR REPLACE INTO heinzel (id, name, namespace, owner, state, activity, "
            "created_at, updated_at) VALUES (?, ?, ?, ?, 'proposed', 'proposed', ?, ?)",
            [source, d["name"], d["namespace"], d.get("owner"), event.ts, event.ts],
        )

    def _apply_heinzel_renamed(self, db: Database, source: str, event: Event) -> None:
        self._update(db, source, name=event.data["name"])

    def _hold(self, db: Database, source: str, hold: str | None) -> None:
        self._update(db, source, hold=hold)
        self._settle(db, source)

    def _apply_heinzel_paused(self, db: Database, source: str, event: Event) -> None:
        self._hold(db, source, "paused")

    def _apply_heinzel_unpaused(self, db: Database, source: str, event: Event) -> None:
        self._hold(db, source, None)

    def _apply_heinzel_retired(self, db: Database, source: str, event: Event) -> None:
        self._hold(db, source, "retired")

    def _apply_heinzel_unretired(self, db: Database, source: str, event: Event) -> None:
        self._hold(db, source, None)

    # -- contracts and amendments ------------------------------------------------

    def _apply_contract_proposed(self, db: Database, source: str, event: Event) -> None:
        self._take_contract(db, source, event, approved=False)
        self._settle(db, source)

    def _apply_contract_approved(self, db: Database, source: str, event: Event) -> None:
        self._take_contract(db, source, event, approved=True)
        self._settle(db, source)

    def _apply_amendment_proposed(self, db: Database, source: str, event: Event) -> None:
        d = event.data
        db.execute(
            "INSERT OR REPLACE INTO amendments VALUES (?, ?, ?, ?, ?, ?, 'proposed', ?, ?)",
            [
                d["amendment"],
                source,
                d["version"],
                d["fingerprint"],
                d["by"],
                int(bool(d.get("widens"))),
                d.get("reason"),
                event.ts,
            ],
        )
        self._settle(db, source)

    def _apply_contract_amended(self, db: Database, source: str, event: Event) -> None:
        self._take_contract(db, source, event, approved=True)
        if event.data.get("amendment"):
            db.execute(
                "UPDATE amendments SET state = 'approved' WHERE id = ?", [event.data["amendment"]]
            )
        self._settle(db, source)

    def _apply_amendment_declined(self, db: Database, source: str, event: Event) -> None:
        db.execute(
            "UPDATE amendments SET state = 'declined' WHERE id = ?", [event.data["amendment"]]
        )
        self._settle(db, source)

    # -- turns, drafts, lessons, questions, spend --------------------------------

    def _apply_turn_started(self, db: Database, source: str, event: Event) -> None:
        d = event.data
        db.execute(
            "INSERT OR REPLACE INTO turns (id, heinzel, cause, causes, key, keys, state, "
            "started_at, start_offset, start_seq, contract_version, parent_turn) "
            "VALUES (?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?)",
            [
                event.turn,
                source,
                d.get("cause"),
                json.dumps(wake_causes(d, event.key)),
                event.key,
                json.dumps(wake_keys(d, event.key)),
                event.ts,
                event.offset,
                event.seq,
                (d.get("pins") or {}).get("contract_version", d.get("contract_version")),
                d.get("parent_turn"),
            ],
        )
        self._update(db, source, last_turn=event.turn)
        self._settle(db, source)
        pins = d.get("pins") or {}
        version = pins.get("vocabulary")
        if (
            isinstance(version, int)
            and version > VOCABULARY_VERSION
            and "vocabulary_name" not in pins
        ):
            # a turn of a later vocabulary: a newer hz wrote here (heinzel.index.versions)
            db.execute(
                "INSERT OR REPLACE INTO marks VALUES (?, ?, ?, ?)",
                [source, event.seq, event.offset, f"newer.vocabulary.{version}"],
            )

    def _apply_turn_waiting(self, db: Database, source: str, event: Event) -> None:
        d = event.data
        db.execute("UPDATE turns SET state = 'waiting' WHERE id = ?", [event.turn])
        db.execute(
            "INSERT OR REPLACE INTO waits VALUES (?, ?, ?, ?, ?)",
            [
                event.turn,
                source,
                d.get("step"),
                d.get("until"),
                json.dumps(d.get("on")) if d.get("on") else None,
            ],
        )
        self._settle(db, source)

    def _apply_turn_resumed(self, db: Database, source: str, event: Event) -> None:
        db.execute("UPDATE turns SET state = 'running' WHERE id = ?", [event.turn])
        db.execute("DELETE FROM waits WHERE turn = ?", [event.turn])
        self._settle(db, source)

    def _end_turn(self, db: Database, source: str, event: Event, state: str) -> None:
        d = event.data
        usd = float(d.get("usd") or d.get("cost_usd") or 0.0)
        db.execute(
            "UPDATE turns SET state = ?, disposition = ?, reason = COALESCE(?, reason, ?), "
            "ended_at = ?, cost_usd = cost_usd + ?, tokens = tokens + ?, "
            "tokens_cached = tokens_cached + ? WHERE id = ?",
            [
                state,
                d.get("disposition", state),
                d.get("reason"),
                d.get("error"),
                event.ts,
                usd,
                int(d.get("tokens") or 0),
                int(d.get("tokens_cached") or 0),
                event.turn,
            ],
        )
        db.execute("DELETE FROM waits WHERE turn = ?", [event.turn])
        self._add_cost(db, source, event, usd)
        self._settle(db, source)

    def _apply_turn_finished(self, db: Database, source: str, event: Event) -> None:
        self._end_turn(db, source, event, "finished")

    def _apply_turn_skipped(self, db: Database, source: str, event: Event) -> None:
        """A skip is often a turn's only line (nothing moved, a cap): it gets its row."""
        d = event.data
        db.execute(
            "INSERT OR IGNORE INTO turns (id, heinzel, cause, causes, key, keys, state, "
            "started_at, start_offset, start_seq) VALUES (?, ?, ?, ?, ?, ?, 'skipped', ?, ?, ?)",
            [
                event.turn,
                source,
                d.get("cause"),
                json.dumps(wake_causes(d, event.key)),
                event.key,
                json.dumps(wake_keys(d, event.key)),
                event.ts,
                event.offset,
                event.seq,
            ],
        )
        self._end_turn(db, source, event, "skipped")

    def _apply_draft_placed(self, db: Database, source: str, event: Event) -> None:
        d = event.data
        db.execute(
            "UPDATE drafts SET state = 'superseded' WHERE heinzel = ? AND output = ? "
            "AND state = 'pending'",
            [source, d.get("output")],
        )
        db.execute(
            "INSERT OR REPLACE INTO drafts VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?)",
            [
                event.key,
                source,
                event.turn,
                d.get("asset"),
                d.get("output"),
                d.get("contract_version", self._turn_version(db, event.turn)),
                event.ts,
                d.get("hash"),
            ],
        )
        self._settle(db, source)

    @staticmethod
    def _turn_version(db: Database, turn: str | None) -> int | None:
        """The contract version a turn is pinned to (a ``draft.placed`` written since
        the version left its data is placed under its turn's pin)."""
        row = db.execute("SELECT contract_version FROM turns WHERE id = ?", [turn]).fetchone()
        return None if row is None else row[0]

    def _apply_effect_failed(self, db: Database, source: str, event: Event) -> None:
        """A failed effect's code is the turn's reason until the turn says another."""
        db.execute(
            "UPDATE turns SET reason = ? WHERE id = ?", [event.data.get("error"), event.turn]
        )

    def _apply_approval_observed(self, db: Database, source: str, event: Event) -> None:
        state = "rejected" if event.data.get("rejected") else "approved"
        db.execute(
            "UPDATE drafts SET state = ? WHERE key = ?",
            [state, event.data.get("draft_key") or event.data.get("draft") or event.key],
        )
        self._settle(db, source)

    def _apply_lesson_recorded(self, db: Database, source: str, event: Event) -> None:
        db.execute(
            "INSERT OR REPLACE INTO lessons VALUES (?, ?, ?, ?, ?, 0, ?)",
            [
                f"{source}:{event.seq}",
                source,
                event.seq,
                event.turn,
                event.data["sentence"],
                event.ts,
            ],
        )

    def _apply_lesson_dismissed(self, db: Database, source: str, event: Event) -> None:
        db.execute(
            "UPDATE lessons SET dismissed = 1 WHERE heinzel = ? AND seq = ?",
            [source, int(event.data["lesson"])],
        )

    def _apply_question_asked(self, db: Database, source: str, event: Event) -> None:
        self._update(db, source, pending=json.dumps({"kind": "question", "ref": event.key}))

    def _apply_question_answered(self, db: Database, source: str, event: Event) -> None:
        self._settle(db, source)

    def _apply_usage(self, db: Database, source: str, event: Event) -> None:
        """Spend outside a turn's own model calls (a handoff's agent, a summary, a lesson):
        the caps count it beside the turn's cost, and the turn's row keeps it apart."""
        d = event.data
        usd = float(d.get("usd") or 0.0)
        if event.turn:
            db.execute(
                "UPDATE turns SET usage_usd = usage_usd + ?, tokens = tokens + ?, "
                "tokens_cached = tokens_cached + ? WHERE id = ?",
                [usd, int(d.get("tokens") or 0), int(d.get("tokens_cached") or 0), event.turn],
            )
        elif d.get("kind") == TRIAL:
            usd -= self._trial(db, source, event)
        self._add_cost(db, source, event, usd)

    def _apply_model_reserved(self, db: Database, source: str, event: Event) -> None:
        """A trial's reservation (outside any turn): counted in full from now on, until
        its ``usage`` settles it or ``model.released`` lets it go."""
        if event.data.get("kind") == TRIAL:
            self._add_cost(db, source, event, float(event.data.get("usd") or 0.0))
            self._trial(db, source, event)

    def _apply_model_released(self, db: Database, source: str, event: Event) -> None:
        """A trial's request that provably cost nothing: its reservation no longer counts."""
        if event.data.get("kind") == TRIAL:
            self._add_cost(db, source, event, -self._trial(db, source, event))

    def _trial(self, db: Database, source: str, event: Event) -> float:
        """Fold one trial line into ``trials``; what of its reservation the day's spend
        lets go now (the open reservation's ``usd`` when this line settles or releases it
        on the day it was made: a reservation of an earlier day stays that day's)."""
        d = event.data
        trial = d.get("trial")
        if event.kind == "model.reserved":
            # one before it of the same trial that nothing settled stays counted in full
            db.execute(
                "UPDATE trials SET state = 'lost' WHERE heinzel = ? AND trial = ? "
                "AND state = 'open'",
                [source, trial],
            )
            db.execute(
                "INSERT OR REPLACE INTO trials (heinzel, seq, trial, of, at, state, reserved) "
                "VALUES (?, ?, ?, ?, ?, 'open', ?)",
                [source, event.seq, trial, d.get("of"), event.ts, float(d.get("usd") or 0.0)],
            )
            return 0.0
        found = (
            None
            if trial is None
            else db.execute(
                "SELECT seq, at, reserved FROM trials WHERE heinzel = ? AND trial = ? "
                "AND state = 'open' ORDER BY seq DESC LIMIT 1",
                [source, trial],
            ).fetchone()
        )
        if event.kind == "model.released":
            if found is None:
                return 0.0
            db.execute(
                "UPDATE trials SET state = 'released' WHERE heinzel = ? AND seq = ?",
                [source, found[0]],
            )
            return float(found[2]) if str(found[1])[:10] == event.ts[:10] else 0.0
        values = [
            float(d.get("usd") or 0.0),
            int(d.get("tokens") or 0),
            int(d.get("tokens_cached") or 0),
        ]
        if found is None:  # a request that reserved nothing (offline), or an older line
            db.execute(
                "INSERT OR REPLACE INTO trials (heinzel, seq, trial, of, at, state, usd, "
                "tokens, tokens_cached) VALUES (?, ?, ?, ?, ?, 'settled', ?, ?, ?)",
                [source, event.seq, trial, d.get("of"), event.ts, *values],
            )
            return 0.0
        db.execute(
            "UPDATE trials SET state = 'settled', usd = ?, tokens = ?, tokens_cached = ? "
            "WHERE heinzel = ? AND seq = ?",
            [*values, source, found[0]],
        )
        return float(found[2]) if str(found[1])[:10] == event.ts[:10] else 0.0


def _iso(moment: datetime | None) -> str | None:
    return format_ts(moment) if moment else None


def _table_exists(db: Database, name: str) -> bool:
    """Whether the index has table ``name`` (a query, not sqlite-utils' ``db[name]``, which
    the index's plain connection would load sqlite-utils for)."""
    query = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
    return db.execute(query, [name]).fetchone() is not None
