"""`ledger.connection.IndexConnection` does what sqlite-utils' Database did for hz's
calls: a write outside a transaction commits at once, a script inside one commits
nothing, ``atomic`` nests as a savepoint, and anything else is sqlite-utils' own."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ledger.connection import IndexConnection


def _open(path: Path) -> IndexConnection:
    return IndexConnection(sqlite3.connect(path))


def test_a_write_outside_a_transaction_is_committed(tmp_path: Path) -> None:
    db = _open(tmp_path / "i.db")
    db.execute("CREATE TABLE t (a INTEGER, b TEXT)")
    db.execute("INSERT INTO t VALUES (?, ?)", [1, "x"])
    assert not db.conn.in_transaction
    other = sqlite3.connect(tmp_path / "i.db")
    assert other.execute("SELECT a, b FROM t").fetchall() == [(1, "x")]
    assert list(db.query("SELECT a, b FROM t")) == [{"a": 1, "b": "x"}]
    assert list(db.query("SELECT a, a FROM t")) == [{"a": 1, "a_2": 1}]  # sqlite-utils'


def test_a_script_in_a_transaction_commits_nothing_and_atomic_nests(tmp_path: Path) -> None:
    db = _open(tmp_path / "i.db")
    db.execute("CREATE TABLE t (a TEXT)")
    with pytest.raises(RuntimeError), db.atomic():
        db.executescript("INSERT INTO t VALUES ('x;y'); INSERT INTO t VALUES ('z');")
        assert db.conn.in_transaction
        with pytest.raises(RuntimeError), db.atomic():
            db.execute("INSERT INTO t VALUES ('inner')")
            raise RuntimeError
        assert [r["a"] for r in db.query("SELECT a FROM t")] == ["x;y", "z"]
        raise RuntimeError
    assert list(db.query("SELECT a FROM t")) == []
    with db.atomic():
        db.executescript("INSERT INTO t VALUES ('kept');")
    assert [r["a"] for r in db.query("SELECT a FROM t")] == ["kept"]


def test_the_rest_is_sqlite_utils(tmp_path: Path) -> None:
    db = _open(tmp_path / "i.db")
    db.table("t").insert({"a": 1})
    assert db.execute("SELECT a FROM t").fetchall() == [(1,)]


def test_a_table_by_its_name_is_sqlite_utils_table(tmp_path: Path) -> None:
    """``db[name]``, as another program's projection may write it, is sqlite-utils' table."""
    db = _open(tmp_path / "i.db")
    db.execute("CREATE TABLE t (a)")
    assert db["t"].exists()
    assert not db["u"].exists()
