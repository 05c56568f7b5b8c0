"""An index a newer hz made (a later schema in its ``user_version``) is refused, coded,
and never written to (docs/spine.md, "Versions")."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from heinzel.index.schema import INDEX_VERSION
from tests.tick.homes import hz, make_home


def user_version(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    finally:
        conn.close()


def test_a_newer_index_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    """Today's index says its schema; one of a later schema makes reads and writes exit 1
    with HZL071 naming both, its rows and every spine untouched; moved away, the next
    command rebuilds it from the spines."""
    root, (heinzel,) = make_home(tmp_path, 1)
    index = root / "home" / "heinzel" / "index.sqlite"
    assert hz(root, "heinzel", "list").returncode == 0
    assert user_version(index) == INDEX_VERSION
    conn = sqlite3.connect(index)
    conn.execute(f"PRAGMA user_version = {INDEX_VERSION + 1}")
    conn.execute("UPDATE heinzel SET state = 'from-the-future'")
    conn.commit()
    conn.close()
    spine = root / "home" / "heinzel" / heinzel / "session.jsonl"
    written = spine.read_bytes()

    for args in (("heinzel", "list"), ("heinzel", "wake", "report-0"), ("approve", "report-0")):
        refused = hz(root, *args)
        assert refused.returncode == 1, (args, refused.stdout)
        assert refused.stderr.startswith(
            f"HZL071: the index {index} was made by a newer hz "
            f"(schema {INDEX_VERSION + 1}; this hz writes schema {INDEX_VERSION})"
        ), refused.stderr
        assert "move the file away" in refused.stderr
    assert spine.read_bytes() == written
    assert user_version(index) == INDEX_VERSION + 1
    conn = sqlite3.connect(index)
    assert conn.execute("SELECT state FROM heinzel").fetchall() == [("from-the-future",)]
    conn.close()

    index.rename(index.with_name("index.sqlite.newer"))
    listed = hz(root, "heinzel", "list")
    assert listed.returncode == 0, listed.stderr
    assert "report-0" in listed.stdout and "asleep" in listed.stdout
