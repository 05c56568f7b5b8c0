"""The index's tables for the heinzel projection: one row per Heinzelmännchen, and rows per
asset, turn, draft, lesson, amendment, wait and key (`heinzel.index.projection` folds events
into them; `heinzel.index.queries` reads them). The index is derived: a schema change is a
``hz heinzel reindex``.
"""

from __future__ import annotations

from typing import Final

__all__ = ["ADDED_COLUMNS", "ADDED_TABLES", "INDEX_VERSION", "MARKED", "SCHEMA", "TABLES"]

INDEX_VERSION: Final = 1
"""The index file's ``user_version``: raised when an older hz would misread or fail on an
index of the new form (a table's meaning changed, a column inserted by position); a
column added by name (`ADDED_COLUMNS`) does not raise it. An hz refuses an index of a
later version (HZL071) rather than write to it (docs/spine.md, "Versions")."""

SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS heinzel (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, namespace TEXT NOT NULL, owner TEXT,
    state TEXT NOT NULL, hold TEXT, activity TEXT NOT NULL,
    contract_name TEXT, contract_version INTEGER, fingerprint TEXT, proposed_version INTEGER,
    assets TEXT NOT NULL DEFAULT '[]', frontmatter TEXT NOT NULL DEFAULT '{}',
    schedule TEXT, timezone TEXT, next_due TEXT, watched TEXT NOT NULL DEFAULT '{}',
    last_turn TEXT, pending TEXT, cost_day TEXT, cost_today REAL NOT NULL DEFAULT 0,
    cost_total REAL NOT NULL DEFAULT 0, created_at TEXT, updated_at TEXT
);
CREATE INDEX IF NOT EXISTS heinzel_name ON heinzel(namespace, name);
CREATE INDEX IF NOT EXISTS heinzel_state ON heinzel(state);
CREATE INDEX IF NOT EXISTS heinzel_contract ON heinzel(contract_name, contract_version);
CREATE INDEX IF NOT EXISTS heinzel_next_due ON heinzel(next_due);
CREATE INDEX IF NOT EXISTS heinzel_cost_day ON heinzel(cost_day);
CREATE TABLE IF NOT EXISTS heinzel_assets (heinzel TEXT NOT NULL, asset TEXT NOT NULL,
    PRIMARY KEY (asset, heinzel));
CREATE TABLE IF NOT EXISTS turns (
    id TEXT PRIMARY KEY, heinzel TEXT NOT NULL, cause TEXT, causes TEXT, key TEXT, keys TEXT,
    state TEXT NOT NULL, disposition TEXT, reason TEXT, started_at TEXT, ended_at TEXT,
    cost_usd REAL NOT NULL DEFAULT 0, start_offset INTEGER, start_seq INTEGER,
    contract_version INTEGER, parent_turn TEXT, tokens INTEGER NOT NULL DEFAULT 0,
    tokens_cached INTEGER NOT NULL DEFAULT 0, usage_usd REAL NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS turns_heinzel ON turns(heinzel, started_at);
CREATE INDEX IF NOT EXISTS turns_state ON turns(state);
CREATE INDEX IF NOT EXISTS turns_start ON turns(heinzel, start_seq);
CREATE INDEX IF NOT EXISTS turns_heinzel_state ON turns(heinzel, state);
CREATE INDEX IF NOT EXISTS turns_open ON turns(heinzel, start_offset) WHERE ended_at IS NULL;
CREATE TABLE IF NOT EXISTS drafts (
    key TEXT PRIMARY KEY, heinzel TEXT NOT NULL, turn TEXT, asset TEXT, output TEXT,
    contract_version INTEGER, state TEXT NOT NULL, placed_at TEXT, hash TEXT
);
CREATE INDEX IF NOT EXISTS drafts_state ON drafts(state);
CREATE INDEX IF NOT EXISTS drafts_heinzel ON drafts(heinzel, state, placed_at);
CREATE TABLE IF NOT EXISTS lessons (
    id TEXT PRIMARY KEY, heinzel TEXT NOT NULL, seq INTEGER NOT NULL, turn TEXT,
    sentence TEXT NOT NULL, dismissed INTEGER NOT NULL DEFAULT 0, recorded_at TEXT
);
CREATE TABLE IF NOT EXISTS amendments (
    id TEXT PRIMARY KEY, heinzel TEXT NOT NULL, version INTEGER, fingerprint TEXT, by TEXT,
    widens INTEGER NOT NULL DEFAULT 0, state TEXT NOT NULL, reason TEXT, proposed_at TEXT
);
CREATE TABLE IF NOT EXISTS waits (
    turn TEXT PRIMARY KEY, heinzel TEXT NOT NULL, step TEXT, until TEXT, wait_on TEXT
);
CREATE INDEX IF NOT EXISTS waits_until ON waits(until);
CREATE TABLE IF NOT EXISTS keys (
    heinzel TEXT NOT NULL, key TEXT NOT NULL, seq INTEGER NOT NULL, line_offset INTEGER NOT NULL,
    kind TEXT NOT NULL, PRIMARY KEY (heinzel, key, seq)
);
CREATE INDEX IF NOT EXISTS keys_kind ON keys(heinzel, kind, key);
CREATE TABLE IF NOT EXISTS marks (
    heinzel TEXT NOT NULL, seq INTEGER NOT NULL, line_offset INTEGER NOT NULL,
    kind TEXT NOT NULL, PRIMARY KEY (heinzel, seq)
);
CREATE INDEX IF NOT EXISTS marks_kind ON marks(heinzel, kind, seq);
CREATE TABLE IF NOT EXISTS trials (
    heinzel TEXT NOT NULL, seq INTEGER NOT NULL, trial TEXT, of TEXT, at TEXT,
    state TEXT NOT NULL, reserved REAL NOT NULL DEFAULT 0, usd REAL NOT NULL DEFAULT 0,
    tokens INTEGER NOT NULL DEFAULT 0, tokens_cached INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (heinzel, seq)
);
CREATE INDEX IF NOT EXISTS trials_open ON trials(heinzel, trial) WHERE state = 'open';
"""

TABLES: Final = (
    "heinzel_assets",
    "turns",
    "drafts",
    "lessons",
    "amendments",
    "waits",
    "keys",
    "marks",
    "trials",
)

MARKED: Final = frozenset(
    {"summary.written", "context.edit", "lesson.recorded", "lesson.dismissed"}
)
"""Kinds whose line offsets ``marks`` keeps: a turn's view reads them without the spine's
whole history (`heinzel.turns.view`)."""

ADDED_COLUMNS: Final = (
    ("turns", "tokens", "INTEGER NOT NULL DEFAULT 0"),
    ("turns", "tokens_cached", "INTEGER NOT NULL DEFAULT 0"),
    ("turns", "usage_usd", "REAL NOT NULL DEFAULT 0"),
)
"""Columns added after a table's first release: an index made before them gets them on
open (zero until `hz heinzel reindex` folds the old lines again); a new one has them in
`SCHEMA`."""

ADDED_TABLES: Final = ("trials",)
"""Tables added after the index's first release: an index made before one gets it on open,
filled from the lines the index had already folded (`heinzel.index.projection`), so no
reindex is needed. ``trials``: one row per model request of `hz heinzel try` (its
reservation, ``open`` until its ``usage {kind: trial}`` settles it or ``model.released``
lets it go)."""
