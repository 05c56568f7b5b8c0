"""Read-side queries over the index: list, show, drafts, lookups by name. No spine is opened."""

from __future__ import annotations

import difflib
import json
import os
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from heinzel.clock import Clock
from heinzel.errors import HeinzelError
from heinzel.ids import is_id
from heinzel.index.listing import LIST_SELECT, Listing
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
        if out.get("state") == "retired" and "next_due" in out:
            out["next_due"] = None  # a retired one is never due
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
            raise _unknown(ref, self._names())
        rows = self._rows("SELECT * FROM heinzel WHERE name = ?", [ref])
        if len(rows) == 1:
            return rows[0]
        if not rows:
            raise _unknown(ref, self._names())
        raise HeinzelError(
            "HZH081", f"{ref!r} names one in each namespace", f"say which: me/{ref} or team/{ref}"
        )

    def _names(self) -> list[str]:
        return [str(r[0]) for r in self.db.execute("SELECT name FROM heinzel").fetchall()]

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

    def lesson(self, heinzel_id: str, name: str, ref: str) -> dict[str, Any]:
        """Lesson number ``ref`` of the Heinzelmännchen ``heinzel_id`` (its ``name`` for the
        hint of HZH078, when there is no such lesson)."""
        rows = self._rows(
            "SELECT * FROM lessons WHERE heinzel = ? AND seq = ?",
            [heinzel_id, int(ref) if ref.isdigit() and len(ref) <= 18 else -1],
        )
        if not rows:
            raise HeinzelError(
                "HZH078",
                f"{name} has no lesson {ref!r}",
                f"`hz heinzel lessons {name}` lists them with their numbers",
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
        self,
        *,
        artifact: str | tuple[str, ...] | None = None,
        state: str | None = None,
        contract: str | None = None,
    ) -> list[dict[str, Any]]:
        """Filter by asset ref, state, and contract (NAME, NAME@V, or KEY=VALUE).

        ``artifact`` is one asset ref or several forms of one (any matches): the form the
        contract wrote (``file:report.md``) or the absolute file it names, resolved against
        the contract's folder (``file:/home/me/notes/report.md``)."""
        where, params = self._list_where(artifact, state, contract)
        sql = f"SELECT {LIST_COLUMNS} FROM heinzel{where}"  # noqa: S608
        today = self._today()
        rows = self._rows(sql + " ORDER BY namespace, name", params)
        return [self._public(r, today) for r in rows]

    def listed(
        self,
        *,
        artifact: str | tuple[str, ...] | None = None,
        state: str | None = None,
        contract: str | None = None,
    ) -> Listing:
        """The rows `listing` gives, as tuples (`heinzel.index.listing`): no dict per row,
        the JSON columns still text. Its notices are the caller's to set."""
        where, params = self._list_where(artifact, state, contract)
        sql = f"SELECT {LIST_SELECT} FROM heinzel{where} ORDER BY namespace, name"  # noqa: S608
        return Listing(self.db.execute(sql, [self._today(), *params]).fetchall())

    def _list_where(
        self,
        artifact: str | tuple[str, ...] | None,
        state: str | None,
        contract: str | None,
    ) -> tuple[str, list[Any]]:
        """A listing's ``WHERE`` clause (or nothing) and its parameters."""
        where: list[str] = []
        params: list[Any] = []
        if artifact:
            forms = (artifact,) if isinstance(artifact, str) else artifact
            where.append("id IN (SELECT value FROM json_each(?))")
            params.append(json.dumps(self._holding(forms)))
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
        return (" WHERE " + " AND ".join(where) if where else ""), params

    def _holding(self, forms: tuple[str, ...]) -> list[str]:
        """The ids whose outputs keep the asset any of ``forms`` names."""
        from heinzel.capabilities.documents import absolute_asset  # only with --artifact

        wanted = {_normal(form) for form in forms}
        rows = self.db.execute(
            "SELECT a.heinzel, a.asset, o.origin FROM heinzel_assets a "
            "LEFT JOIN tick_origins o ON o.heinzel = a.heinzel"
        ).fetchall()
        return sorted(
            {
                str(heinzel)
                for heinzel, asset, origin in rows
                if _normal(asset) in wanted
                or (origin and _normal(absolute_asset(asset, Path(origin))) in wanted)
            }
        )

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
            "usage_usd, tokens, tokens_cached, contract_version, parent_turn FROM turns "
            "WHERE heinzel = ? "
            "ORDER BY started_at, start_seq, id",
            [heinzel_id],
        )
        month = self._today()[:7]
        by_cause: dict[str, float] = {}
        tokens: dict[str, dict[str, int]] = {}
        for turn in turns:
            if (turn["started_at"] or "").startswith(month):
                spent = turn["cost_usd"] + turn["usage_usd"]
                by_cause[turn["cause"]] = round(by_cause.get(turn["cause"], 0.0) + spent, 6)
                counted = tokens.setdefault(turn["cause"], {"tokens": 0, "tokens_cached": 0})
                counted["tokens"] += turn["tokens"]
                counted["tokens_cached"] += turn["tokens_cached"]
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
            "cost_month": {
                "total": round(sum(by_cause.values()), 6),
                "by_cause": by_cause,
                "tokens": sum(one["tokens"] for one in tokens.values()),
                "tokens_cached": sum(one["tokens_cached"] for one in tokens.values()),
                "tokens_by_cause": tokens,
            },
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


def _normal(asset: str) -> str:
    """An asset ref with an absolute file path written plainly (``a/./b`` is ``a/b``)."""
    scheme, _, path = asset.partition(":")
    if scheme == "file" and path.startswith("/"):
        return "file:" + os.path.normpath(path)
    return asset


def _unknown(ref: str, names: Sequence[str] = ()) -> HeinzelError:
    """HZH080, with "did you mean" when a known name is close to ``ref``."""
    close = difflib.get_close_matches(ref.rpartition("/")[2], sorted(set(names)), n=3)
    hint = "`hz heinzel list` shows them all"
    if close:
        hint = "did you mean " + " or ".join(repr(name) for name in close) + "? " + hint
    return HeinzelError("HZH080", f"no Heinzelmännchen named {ref!r}", hint)
