"""Read-side queries over the index: list, show, drafts, lookups by name. No spine is opened."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from typing import Any

from heinzel.clock import Clock
from heinzel.errors import HeinzelError
from heinzel.ids import is_id
from ledger.event import format_ts, parse_ts

__all__ = ["LIST_COLUMNS", "Queries"]

LIST_COLUMNS = (
    "id, name, namespace, state, contract_name, contract_version, fingerprint, assets, "
    "next_due, last_turn, pending, cost_day, cost_today"
)
STATES = ("proposed", "asleep", "awake", "waiting", "paused", "retired")


class Queries:
    """Index lookups; rows come back as plain dicts with JSON columns decoded."""

    def __init__(self, db: sqlite3.Connection, clock: Clock) -> None:
        """``db`` is a plain connection: the writer's, or a read one (start-up by need)."""
        self.db = db
        self.clock = clock

    def _rows(self, sql: str, params: list[Any] | tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        cursor = self.db.execute(sql, list(params))
        names = [column[0] for column in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor]

    def _today(self) -> str:
        return format_ts(self.clock())[:10]

    def _public(self, row: dict[str, Any], today: str | None = None) -> dict[str, Any]:
        """``today`` once per listing, not per row (the clock read and formatted once)."""
        out = dict(row)
        for key in ("assets", "watched", "frontmatter", "pending"):
            if key in out and isinstance(out[key], str):
                out[key] = json.loads(out[key])
        if "cost_today" in out:
            out["cost_today"] = (
                out["cost_today"] if out.pop("cost_day", None) == (today or self._today()) else 0.0
            )
        return out

    # -- lookups -----------------------------------------------------------------

    def row(self, heinzel_id: str) -> dict[str, Any]:
        rows = self._rows("SELECT * FROM heinzel WHERE id = ?", [heinzel_id])
        if not rows:
            raise _unknown(heinzel_id)
        return rows[0]

    def find_by_name(self, namespace: str, name: str) -> dict[str, Any] | None:
        rows = self._rows(
            "SELECT * FROM heinzel WHERE namespace = ? AND name = ?", [namespace, name]
        )
        return rows[0] if rows else None

    def resolve(self, ref: str) -> dict[str, Any]:
        """An id, a name, or ``namespace/name`` when a name exists in both namespaces."""
        if is_id(ref):
            return self.row(ref)
        if "/" in ref:
            namespace, _, name = ref.partition("/")
            found = self.find_by_name(namespace, name)
            if found:
                return found
            raise _unknown(ref)
        rows = self._rows("SELECT * FROM heinzel WHERE name = ?", [ref])
        if len(rows) == 1:
            return rows[0]
        if not rows:
            raise _unknown(ref)
        raise HeinzelError(
            "HZH081", f"{ref!r} names one in each namespace", f"say which: me/{ref} or team/{ref}"
        )

    def pending_amendment(self, heinzel_id: str) -> dict[str, Any] | None:
        rows = self._rows(
            "SELECT * FROM amendments WHERE heinzel = ? AND state = 'proposed'", [heinzel_id]
        )
        return rows[0] if rows else None

    def declined_amendments(self, heinzel_id: str) -> list[dict[str, Any]]:
        return self._rows(
            "SELECT * FROM amendments WHERE heinzel = ? AND state = 'declined' ORDER BY version",
            [heinzel_id],
        )

    def amendment(self, amendment_id: str) -> dict[str, Any]:
        return self._rows("SELECT * FROM amendments WHERE id = ?", [amendment_id])[0]

    def next_version(self, heinzel_id: str) -> int:
        row = self.db.execute(
            "SELECT MAX(v) FROM (SELECT contract_version AS v FROM heinzel WHERE id = ? "
            "UNION ALL SELECT version FROM amendments WHERE heinzel = ?)",
            [heinzel_id, heinzel_id],
        ).fetchone()
        return int(row[0] or 0) + 1

    def lessons(self, heinzel_id: str) -> list[dict[str, Any]]:
        return self._rows(
            "SELECT seq, sentence, dismissed, turn, recorded_at FROM lessons "
            "WHERE heinzel = ? ORDER BY seq",
            [heinzel_id],
        )

    def lesson(self, heinzel_id: str, ref: str) -> dict[str, Any]:
        rows = self._rows(
            "SELECT * FROM lessons WHERE heinzel = ? AND seq = ?",
            [heinzel_id, int(ref) if ref.isdigit() and len(ref) <= 18 else -1],
        )
        if not rows:
            raise HeinzelError(
                "HZH078",
                f"no lesson {ref!r}",
                "`hz heinzel lessons NAME` lists them with their numbers",
            )
        return rows[0]

    def ended_turns(self, heinzel_id: str) -> dict[str, datetime]:
        return {
            r["id"]: parse_ts(r["ended_at"])
            for r in self._rows(
                "SELECT id, ended_at FROM turns WHERE heinzel = ? AND ended_at IS NOT NULL",
                [heinzel_id],
            )
        }

    # -- listings ----------------------------------------------------------------

    def listing(
        self, *, artifact: str | None = None, state: str | None = None, contract: str | None = None
    ) -> list[dict[str, Any]]:
        """Filter by asset ref, state, and contract (NAME, NAME@V, or KEY=VALUE)."""
        where: list[str] = []
        params: list[Any] = []
        if artifact:
            where.append("id IN (SELECT heinzel FROM heinzel_assets WHERE asset = ?)")
            params.append(artifact)
        if state:
            if state not in STATES:
                raise HeinzelError(
                    "HZH082", f"unknown state {state!r}", f"one of: {', '.join(STATES)}"
                )
            where.append("state = ?")
            params.append(state)
        if contract:
            clause, values = _contract_filter(contract)
            where.append(clause)
            params += values
        sql = f"SELECT {LIST_COLUMNS} FROM heinzel"  # noqa: S608
        if where:
            sql += " WHERE " + " AND ".join(where)
        today = self._today()
        rows = self._rows(sql + " ORDER BY namespace, name", params)
        return [self._public(r, today) for r in rows]

    def drafts(self) -> list[dict[str, Any]]:
        return self._rows(
            "SELECT d.key, h.name, d.heinzel, d.asset, d.output, d.contract_version, "
            "d.placed_at, d.turn FROM drafts d JOIN heinzel h ON h.id = d.heinzel "
            "WHERE d.state = 'pending' ORDER BY d.placed_at"
        )

    def show(self, heinzel_id: str) -> dict[str, Any]:
        row = self._public(self.row(heinzel_id))
        versions = self._rows(
            "SELECT version, fingerprint, by, state, proposed_at FROM amendments "
            "WHERE heinzel = ? ORDER BY version",
            [heinzel_id],
        )
        turns = self._rows(
            "SELECT id, cause, state, disposition, reason, started_at, ended_at, cost_usd, "
            "contract_version, parent_turn FROM turns WHERE heinzel = ? ORDER BY started_at, id",
            [heinzel_id],
        )
        month = self._today()[:7]
        by_cause: dict[str, float] = {}
        for turn in turns:
            if (turn["started_at"] or "").startswith(month):
                by_cause[turn["cause"]] = by_cause.get(turn["cause"], 0.0) + turn["cost_usd"]
        return {
            **row,
            "amendments": versions,
            "turns": turns,
            "lessons": self.lessons(heinzel_id),
            "drafts": self._rows(
                "SELECT key, asset, output, contract_version, state, "
                "placed_at FROM drafts WHERE heinzel = ? ORDER BY placed_at",
                [heinzel_id],
            ),
            "cost_month": {"total": round(sum(by_cause.values()), 6), "by_cause": by_cause},
        }


def _contract_filter(text: str) -> tuple[str, list[Any]]:
    if "=" in text:
        key, _, value = text.partition("=")
        parsed: Any = value
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = value
        return "json_extract(frontmatter, ?) = ?", [f'$."{key}"', parsed]
    name, _, version = text.partition("@")
    if version:
        if not version.lstrip("v").isdigit():
            raise HeinzelError(
                "HZH083", f"bad contract version in {text!r}", "write NAME@3 (or NAME@v3)"
            )
        return "contract_name = ? AND contract_version = ?", [name, int(version.lstrip("v"))]
    return "contract_name = ?", [name]


def _unknown(ref: str) -> HeinzelError:
    return HeinzelError(
        "HZH080", f"no Heinzelmännchen named {ref!r}", "`hz heinzel list` shows them all"
    )
