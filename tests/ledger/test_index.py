"""The derived index base: watermarks, catch-up, rebuild equal to incremental."""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
import stat
import tempfile
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlite_utils import Database

from ledger.errors import LedgerError
from ledger.event import Event
from ledger.index import WATERMARKS, Index, close_keeping_wal
from ledger.reading import Upgrades
from ledger.spine import Spine


def clock() -> datetime:
    return datetime(2026, 10, 30, 15, 0, tzinfo=UTC)


class Toy:
    """A projection for tests: a row per source and a row per event."""

    name = "toy"

    def create(self, db: Database) -> None:
        db.table("toy_sources").create(
            {"source": str, "count": int, "total": int, "last_kind": str},
            pk="source",
            if_not_exists=True,
        )
        db.table("toy_events").create(
            {"source": str, "seq": int, "kind": str}, pk=("source", "seq"), if_not_exists=True
        )

    def apply(self, db: Database, source: str, event: Event) -> None:
        rows = list(db.table("toy_sources").rows_where("source = ?", [source]))
        row = rows[0] if rows else {"source": source, "count": 0, "total": 0}
        row["count"] += 1
        row["total"] += int(event.data.get("n", 0))
        row["last_kind"] = event.kind
        db.table("toy_sources").upsert(row, pk="source")
        db.table("toy_events").insert(
            {"source": source, "seq": event.seq, "kind": event.kind}, replace=True
        )

    def clear(self, db: Database, source: str) -> None:
        for table in ("toy_sources", "toy_events"):
            db.table(table).delete_where("source = ?", [source])


def dump(index: Index) -> dict[str, list[dict[str, Any]]]:
    return {
        table: sorted(index.db.table(table).rows, key=repr)
        for table in ("toy_sources", "toy_events", WATERMARKS)
    }


def append(
    directory: Path, index: Index | None, source: str, *items: tuple[str, int]
) -> list[Event]:
    hooks = [functools.partial(index.apply, source)] if index else []
    with Spine.open(directory, clock=clock, on_durable=hooks) as spine:
        return [spine.append(kind, {"n": n}) for kind, n in items]


class TestIndex:
    @pytest.mark.usefixtures("hostile_umask")
    def test_the_index_file_is_private_and_in_wal_mode(self, tmp_path: Path) -> None:
        """index.sqlite and its WAL companions are 0600; journal_mode is wal."""
        with Index(tmp_path / "idx" / "index.sqlite", [Toy()]) as index:
            append(tmp_path / "s", index, "s", ("a.b", 1))
            mode = index.db.execute("PRAGMA journal_mode").fetchone()[0]
            files = [p for p in (tmp_path / "idx").iterdir()]
            modes = {p.name: stat.S_IMODE(os.stat(p).st_mode) for p in files}
        assert mode == "wal"
        assert set(modes.values()) == {0o600}
        assert stat.S_IMODE(os.stat(tmp_path / "idx").st_mode) == 0o700

    def test_no_sqlite_utils_plugin_touches_the_index_connection(self, tmp_path: Path) -> None:
        """An installed sqlite-utils plugin's ``prepare_connection`` never runs on the
        index's connection (and opening the index looks for none)."""
        from sqlite_utils import hookimpl
        from sqlite_utils.plugins import pm

        prepared: list[object] = []

        class Plugin:
            @hookimpl
            def prepare_connection(self, conn: object) -> None:
                prepared.append(conn)

        plugin = Plugin()
        pm.register(plugin)
        try:
            with Index(tmp_path / "index.sqlite", [Toy()]) as index:
                append(tmp_path / "s", index, "s", ("a.b", 1))
        finally:
            pm.unregister(plugin)
        assert prepared == []

    def test_on_durable_keeps_rows_and_watermark_current(self, tmp_path: Path) -> None:
        """Each durable line updates rows and the watermark together."""
        with Index(tmp_path / "index.sqlite", [Toy()]) as index:
            events = append(tmp_path / "s", index, "s", ("a.b", 2), ("c.d", 3))
            assert index.watermark("s") == (2, events[-1].hash)
            assert dump(index)["toy_sources"] == [
                {"source": "s", "count": 2, "total": 5, "last_kind": "c.d"}
            ]

    def test_applying_an_event_twice_changes_nothing(self, tmp_path: Path) -> None:
        """apply is idempotent per line."""
        with Index(tmp_path / "index.sqlite", [Toy()]) as index:
            events = append(tmp_path / "s", index, "s", ("a.b", 2))
            index.apply("s", events[0])
            assert dump(index)["toy_sources"][0]["count"] == 1

    def test_a_missed_line_is_refused_until_catch_up(self, tmp_path: Path) -> None:
        """A crash between append and apply leaves a gap: HZL050, then catch_up fills it."""
        spine_dir = tmp_path / "s"
        with Index(tmp_path / "index.sqlite", [Toy()]) as index:
            append(spine_dir, index, "s", ("a.b", 1))
            append(spine_dir, None, "s", ("a.b", 10))
            with pytest.raises(LedgerError) as caught:
                append(spine_dir, index, "s", ("a.b", 100))
            assert caught.value.code == "HZL050"
            assert index.catch_up("s", spine_dir / "session.jsonl") == 2
            assert dump(index)["toy_sources"][0]["total"] == 111

    def test_refresh_reads_no_watermark_when_no_spine_is_there(self, tmp_path: Path) -> None:
        """Session folders without a spine (a tick's `Home.spine_files`, thousands asleep)
        cost refresh a `lstat` each: no watermark is read. A spine that is there and
        behind is caught up as before, with the spineless ones beside it."""
        with Index(tmp_path / "index.sqlite", [Toy()]) as index:
            append(tmp_path / "s", index, "s", ("a.b", 1))
            missing = {f"m{i}": str(tmp_path / f"m{i}" / "session.jsonl") for i in range(50)}
            said: list[str] = []
            index.db.conn.set_trace_callback(said.append)
            assert index.refresh(missing) == {}
            index.db.conn.set_trace_callback(None)
            assert not [sql for sql in said if WATERMARKS in sql]
            append(tmp_path / "s", None, "s", ("a.b", 10))  # an append the index missed
            spine = tmp_path / "s" / "session.jsonl"
            assert index.refresh({**missing, "s": spine}) == {"s": None}
            assert dump(index)["toy_sources"][0]["total"] == 11
            (tmp_path / "m0").mkdir()
            (tmp_path / "m0" / "session.jsonl").symlink_to(tmp_path / "gone")
            with pytest.raises(LedgerError) as caught:  # a dangling link is still refused
                index.refresh(missing)
            assert caught.value.code == "HZL001"

    def test_a_watermark_the_spine_disagrees_with_rebuilds_the_source(self, tmp_path: Path) -> None:
        """When the watermark's line is not in the spine, that source's rows are refolded."""
        with Index(tmp_path / "index.sqlite", [Toy()]) as index:
            append(tmp_path / "one", index, "s", ("a.b", 1), ("a.b", 2))
            append(tmp_path / "other", None, "x", ("c.d", 7))
            index.catch_up("s", tmp_path / "other" / "session.jsonl")
            assert dump(index)["toy_sources"] == [
                {"source": "s", "count": 1, "total": 7, "last_kind": "c.d"}
            ]

    def test_catch_up_moves_past_a_damaged_last_line(self, tmp_path: Path) -> None:
        """A damaged line gives no rows, and the next append still applies."""
        spine_dir = tmp_path / "s"
        path = spine_dir / "session.jsonl"
        with Index(tmp_path / "index.sqlite", [Toy()]) as index:
            append(spine_dir, None, "s", ("a.b", 1), ("a.b", 2))
            path.write_bytes(path.read_bytes()[:-5] + b"xx}}\n")
            assert index.catch_up("s", path) == 1
            hooks = [functools.partial(index.apply, "s")]
            with Spine.open(spine_dir, clock=clock, on_durable=hooks) as spine:
                spine.append("a.b", {"n": 4})
            assert dump(index)["toy_sources"][0]["total"] == 5

    def test_catch_up_then_open_folds_what_open_contains(self, tmp_path: Path) -> None:
        """The writer's order: the torn-tail record of open chains to the watermark."""
        spine_dir = tmp_path / "s"
        with Index(tmp_path / "index.sqlite", [Toy()]) as index:
            append(spine_dir, None, "s", ("a.b", 1))
            with (spine_dir / "session.jsonl").open("ab") as handle:
                handle.write(b'{"da')
            index.catch_up("s", spine_dir / "session.jsonl")
            append(spine_dir, index, "s", ("a.b", 2))
            assert [r["kind"] for r in dump(index)["toy_events"]] == [
                "a.b",
                "spine.torn_tail",
                "a.b",
            ]

    def test_rebuild_drops_sources_whose_spine_is_not_named(self, tmp_path: Path) -> None:
        """rebuild refolds the named spines only."""
        with Index(tmp_path / "index.sqlite", [Toy()]) as index:
            append(tmp_path / "a", index, "a", ("k.k", 1))
            append(tmp_path / "b", index, "b", ("k.k", 1))
            index.rebuild({"a": tmp_path / "a" / "session.jsonl"})
            assert index.sources() == ["a"]
            assert [r["source"] for r in dump(index)["toy_sources"]] == ["a"]

    def test_upgrades_apply_before_projections(self, tmp_path: Path) -> None:
        """Projections see old kinds migrated."""
        upgrades = Upgrades()
        upgrades.register("old.kind", "new.kind", lambda d: {"n": d["n"] * 10})
        with Index(tmp_path / "index.sqlite", [Toy()], upgrades=upgrades) as index:
            append(tmp_path / "s", None, "s", ("old.kind", 1))
            index.catch_up("s", tmp_path / "s" / "session.jsonl")
            assert dump(index)["toy_sources"][0] == {
                "source": "s",
                "count": 1,
                "total": 10,
                "last_kind": "new.kind",
            }


operations = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c"]),
        st.booleans(),
        st.lists(st.tuples(st.sampled_from(["x.y", "z.w"]), st.integers(0, 9)), max_size=3),
    ),
    max_size=6,
)


class TestRebuildProperty:
    @settings(derandomize=True, deadline=None, max_examples=25)
    @given(operations=operations)
    def test_rebuild_gives_exactly_the_incremental_rows(
        self, operations: list[tuple[str, bool, list[tuple[str, int]]]]
    ) -> None:
        """Appends with the index live or down, then catch-up, equal a rebuild from spines."""
        with tempfile.TemporaryDirectory() as name:
            root = Path(name)
            with Index(root / "index.sqlite", [Toy()]) as index:
                for source, live, items in operations:
                    path = root / source / "session.jsonl"
                    if live:
                        index.catch_up(source, path)
                    append(root / source, index if live else None, source, *items)
                spines = {s: root / s / "session.jsonl" for s, _, _ in operations}
                for source, path in spines.items():
                    index.catch_up(source, path)
                incremental = dump(index)
                with Index(root / "fresh.sqlite", [Toy()]) as fresh:
                    fresh.rebuild(spines)
                    assert dump(fresh) == incremental
                index.rebuild(spines)
                assert dump(index) == incremental


class TestIndexErrors:
    def test_a_file_that_is_not_sqlite_is_a_coded_error(self, tmp_path: Path) -> None:
        """HZL051 says the index is derived and can be rebuilt."""
        (tmp_path / "index.sqlite").write_bytes(b"not a database, just text" * 100)
        with pytest.raises(LedgerError) as caught:
            Index(tmp_path / "index.sqlite", [Toy()])
        assert caught.value.code == "HZL051"
        assert "rebuild" in caught.value.hint

    def test_an_index_that_is_a_link_is_a_coded_error(self, tmp_path: Path) -> None:
        """An index path that is a symbolic link is HZL051, and its target is left as it was."""
        target = tmp_path / "elsewhere"
        target.write_bytes(b"")
        target.chmod(0o644)
        (tmp_path / "index.sqlite").symlink_to(target)
        with pytest.raises(LedgerError) as caught:
            Index(tmp_path / "index.sqlite", [Toy()])
        assert caught.value.code == "HZL051"
        assert (target.read_bytes(), target.stat().st_mode & 0o777) == (b"", 0o644)

    def test_a_directory_in_the_way_is_a_coded_error(self, tmp_path: Path) -> None:
        """An index path hz cannot open is HZL051."""
        (tmp_path / "index.sqlite").mkdir()
        with pytest.raises(LedgerError) as caught:
            Index(tmp_path / "index.sqlite", [Toy()])
        assert caught.value.code == "HZL051"


class TestCloseKeepingWal:
    """`close_keeping_wal`: no checkpoint on close, so the WAL and what it holds stay."""

    def test_the_wal_stays_and_holds_the_rows(self, tmp_path: Path) -> None:
        """A write, then the close: the WAL is still there with the row in it (a plain
        close, the last one, checkpoints and deletes it), and the next reader sees the row."""
        path = tmp_path / "db.sqlite"
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE t (x)")
        conn.execute("INSERT INTO t VALUES (1)")
        conn.commit()
        close_keeping_wal(path, conn)
        assert Path(f"{path}-wal").stat().st_size > 0
        with contextlib.closing(sqlite3.connect(path)) as again:
            assert again.execute("SELECT x FROM t").fetchall() == [(1,)]

    def test_a_connection_of_another_thread_is_left_to_it(self, tmp_path: Path) -> None:
        """One made in another thread cannot be closed here: it is left open, and the
        others close."""
        path = tmp_path / "db.sqlite"
        made: list[sqlite3.Connection] = []
        worker = threading.Thread(target=lambda: made.append(sqlite3.connect(path)))
        worker.start()
        worker.join()
        mine = sqlite3.connect(path)
        close_keeping_wal(path, made[0], mine)
        with pytest.raises(sqlite3.ProgrammingError, match="closed"):
            mine.execute("SELECT 1")
