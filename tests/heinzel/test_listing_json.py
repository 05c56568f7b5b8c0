"""`hz heinzel list --json` over many: the lines made from the SQL rows (`heinzel.index.listing`)
are byte for byte what ``json.dumps`` of `Service.listing`'s dicts gives, over every kind of
column value the index holds; and the read path's quick look at each spine's tail
(`ledger.index_read`) finds behind exactly the spines `ledger.index.behind` finds."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from heinzel.cli import group
from heinzel.cli.base import ONE_A_LINE
from heinzel.config import load_settings
from heinzel.contract import load_contract
from heinzel.ids import new_id
from heinzel.service import Service
from heinzel.store.contracts import store_version
from heinzel.store.home import Home
from ledger.event import make_event
from ledger.index import behind
from ledger.index_read import _unsure, open_current
from tests.heinzel.conftest import GOOD, SteppingClock

CONTRACT = GOOD / "weekly-report.prose.md"
NAMES = ["report", "bericht-über-den-tag", 'say-"hi"', "tab\tand\\slash", "naïve\u2028line"]


def _populate(service: Service, clock: SteppingClock, count: int) -> list[str]:
    """``count`` Heinzelmännchen whose rows the real projection makes, each with its spine."""
    compiled = load_contract(CONTRACT)
    text = CONTRACT.read_text()
    ids = []
    for i in range(count):
        heinzel_id = new_id(clock)
        ids.append(heinzel_id)
        facts = store_version(service.home, heinzel_id, 1, text, compiled)
        namespace = "team" if i % 7 == 3 else "me"
        events = [
            ("heinzel.created", {"name": f"{NAMES[i % 5]}-{i:04d}", "namespace": namespace}),
            ("contract.proposed", {"version": 1, "fingerprint": facts.fingerprint, "by": "user"}),
        ]
        if i % 11 != 5:  # some stay proposed: no version, no fingerprint
            events.append(("contract.approved", {"version": 1, "fingerprint": facts.fingerprint}))
        prev, offset = None, 0
        spine = service.home.spine_path(heinzel_id)
        for seq, (kind, data) in enumerate(events, start=1):
            event = make_event(
                seq=seq, ts="2026-10-26T09:00:00.000Z", prev=prev, kind=kind, data=data,
                offset=offset,
            )  # fmt: skip
            with spine.open("ab") as out:
                out.write(event.line())
            offset += len(event.line())
            service.index.apply(heinzel_id, event)
            prev = event.hash
    return ids


def _vary(db: sqlite3.Connection, ids: list[str]) -> None:
    """Every kind of value a listed column holds: JSON columns with escapes, unsorted keys
    and non-ASCII; costs of today and of another day; retired ones with a due slot; notices
    of a cap reached and of a failed turn."""
    for i, heinzel_id in enumerate(ids):
        sets: dict[str, object] = {}
        if i % 3 == 0:
            sets["assets"] = json.dumps([f"doc:über/{i}", 'file:a "b".md', "x\\y"])
        elif i % 3 == 1:
            sets["assets"] = json.dumps([f"doc:checkout/r{i}", "file:notes.md"], ensure_ascii=False)
        else:
            sets["assets"] = '["doc:a","doc:b"]'  # not json's own spacing: re-encoded
        if i % 4 == 1:
            sets["pending"] = json.dumps({"ref": f"k{i}", "kind": "draft", "ü": [3, None]})
        if i % 5 == 2:
            sets.update(cost_day="2026-10-26", cost_today=0.1 + 0.2 * i)
        elif i % 5 == 3:
            sets.update(cost_day="2026-10-25", cost_today=1.5)
        if i % 9 == 4:
            sets.update(state="retired", next_due="2026-10-30T14:00:00.000Z")
        if i % 10 == 6:
            sets["last_turn"] = f"turn-{i}"
        if i % 13 == 7:
            sets.update(contract_name=None, fingerprint=None)
        assignments = ", ".join(f"{key} = ?" for key in sets)
        db.execute(f"UPDATE heinzel SET {assignments} WHERE id = ?", [*sets.values(), heinzel_id])
        if i % 6 == 2:
            db.execute(
                "INSERT INTO turns (id, heinzel, state, reason, started_at) "
                "VALUES (?, ?, 'skipped', 'cap', '2026-10-26T08:00:00.000Z')",
                [f"cap-{i}", heinzel_id],
            )
        if i % 8 == 2:
            db.execute(
                "INSERT INTO turns (id, heinzel, state, disposition, reason, started_at, ended_at)"
                " VALUES (?, ?, 'finished', 'failed', 'model said no', "
                "'2026-10-26T07:00:00.000Z', '2026-10-26T07:01:00.000Z')",
                [f"failed-{i}", heinzel_id],
            )
    db.commit()


@pytest.fixture(scope="module")
def built_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 240 Heinzelmännchen's home, made once per module (each of its 1,000 events an
    fsync'd spine write and an index apply: about 6 s); the tests get a copy (`home`)."""
    root = tmp_path_factory.mktemp("listing")
    clock = SteppingClock(datetime(2026, 10, 26, 9, 0, tzinfo=UTC))
    loaded = load_settings(env={}, cwd=root, site=None, user=None, data_dir=root / "home")
    service = Service(Home(root / "home"), clock, loaded.settings, owner="priya")
    ids = _populate(service, clock, 240)
    _vary(service.index.db.conn, ids)
    service.index.db.conn.close()
    return root / "home"


@pytest.fixture
def home(built_home: Path, tmp_path: Path) -> Path:
    """A copy of `built_home` where `make_service` opens its home: each test changes its own
    (mtimes kept, as the spines' currency is read from their files)."""
    return Path(shutil.copytree(built_home, tmp_path / "home"))


@pytest.fixture
def small_home(make_service: Callable[[], Service], clock: SteppingClock, tmp_path: Path) -> Path:
    service = make_service()
    _populate(service, clock, 24)
    service.index.db.conn.close()
    return tmp_path / "home"


def _hz(home: Path, *args: str) -> str:
    env = {"HZ_NOW": "2026-10-26T09:00:00Z", "HZ_CONFIG": "", "XDG_CONFIG_HOME": "/nonexistent"}
    result = CliRunner().invoke(
        group(), ["heinzel", "list", "--home", str(home), *args], env=env, catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    return result.output


def _reference(rows: list[dict[str, object]]) -> str:
    """What `hz heinzel list --json` printed before: json.dumps of each dict."""
    if len(rows) > ONE_A_LINE:
        items = (json.dumps(row, ensure_ascii=False, sort_keys=True) for row in rows)
        return "[\n" + ",\n".join(items) + "\n]\n"
    return json.dumps(rows, indent=2, ensure_ascii=False, sort_keys=True) + "\n"


class TestListingJson:
    def test_the_json_is_byte_for_byte_the_dicts(
        self, home: Path, make_service: Callable[[], Service]
    ) -> None:
        """240 rows with escapes, non-ASCII, unsorted JSON columns, nulls, costs of today
        and before, retired ones, notices: the same text as json.dumps of the dicts."""
        rows = make_service().listing()
        printed = _hz(home, "--json")
        assert printed == _reference(rows)
        assert len(json.loads(printed)) == 240
        kinds = {key: {type(row[key]).__name__ for row in rows} for key in rows[0]}
        assert kinds["pending"] == {"NoneType", "dict"}
        assert kinds["contract_version"] == {"NoneType", "int"}
        assert kinds["next_due"] == {"NoneType", "str"}
        assert {len(row["notices"]) for row in rows} >= {0, 1, 2}  # type: ignore[arg-type]
        assert {row["cost_today"] for row in rows} > {0.0}

    def test_filters_and_namespaces_print_the_same(
        self, home: Path, make_service: Callable[[], Service]
    ) -> None:
        """A state, a namespace (more and fewer than one a line): the same as the dicts."""
        service = make_service()
        cases = (
            (("--state", "asleep"), service.listing(state="asleep")),
            (("--namespace", "team"), [r for r in service.listing() if r["namespace"] == "team"]),
            (("--state", "retired"), service.listing(state="retired")),
            (("--contract", "weekly-report"), service.listing(contract="weekly-report")),
            (
                ("--state", "retired", "--namespace", "team"),  # a few: indented
                [r for r in service.listing(state="retired") if r["namespace"] == "team"],
            ),
        )
        for args, rows in cases:
            assert _hz(home, "--json", *args) == _reference(rows), args
        assert 0 < len(cases[-1][1]) <= ONE_A_LINE < len(cases[0][1])

    def test_many_print_with_no_dict_per_row(
        self, home: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A guard, not a fix: more than one a line, no row goes through a dict (neither
        `Queries._public` nor the fallback of a value the fast form does not know)."""
        from heinzel.index.listing import Listing
        from heinzel.index.queries import Queries

        def refuse(*args: object) -> None:
            pytest.fail("a dict per row")

        monkeypatch.setattr(Listing, "_dict", refuse)
        monkeypatch.setattr(Queries, "_public", refuse)
        assert len(json.loads(_hz(home, "--json"))) == 240

    def test_many_print_without_a_search_for_ansi_codes(
        self, home: Path, make_service: Callable[[], Service], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A guard, not a fix: the lines are JSON, which escapes every control character,
        so click is not asked to strip ANSI codes from megabytes of them (piped, it would
        search the whole text); the text is the dicts' all the same."""
        import click.utils

        def refuse(value: str) -> str:
            pytest.fail("the JSON lines were searched for ANSI codes")

        monkeypatch.setattr(click.utils, "strip_ansi", refuse)
        assert _hz(home, "--json") == _reference(make_service().listing())

    def test_a_file_named_as_an_id_is_no_heinzelmaennchen(
        self, small_home: Path, make_service: Callable[[], Service]
    ) -> None:
        """`heinzel/` is listed by name (`Home.spine_files`): a file, a dangling link and
        a folder named like an id with no spine are in no listing and break none."""
        rows = make_service().listing()
        stray = [new_id(lambda: datetime(2026, 10, 26, 9, tzinfo=UTC)) for _ in range(3)]
        (small_home / "heinzel" / stray[0]).write_text("not a folder\n", encoding="utf-8")
        (small_home / "heinzel" / stray[1]).symlink_to(small_home / "nowhere")
        (small_home / "heinzel" / stray[2]).mkdir()
        assert _hz(small_home, "--json") == _reference(rows)
        assert len(rows) == 24

    def test_the_rows_as_dicts_are_the_listing(self, make_service: Callable[[], Service]) -> None:
        """`Service.listed().dicts()` (what the table prints from) is `Service.listing()`."""
        service = make_service()
        assert service.listed().dicts() == service.listing()

    def test_the_table_is_unchanged(self, home: Path, make_service: Callable[[], Service]) -> None:
        from heinzel.cli.render import listing

        assert _hz(home) == listing(make_service().listing()) + "\n"


class TestQuickTail:
    """The read path opens each spine once: `_unsure` keeps every source `behind` finds."""

    @pytest.mark.parametrize(
        "change",
        [
            "none",
            "appended",
            "torn",
            "same-length",
            "cut",
            "emptied",
            "removed",
            "directory",
            "link",
            "dangling",
            "no-watermark",
        ],
    )
    def test_same_answer_as_behind(self, small_home: Path, change: str) -> None:
        home = small_home
        top = home / "heinzel"
        index = top / "index.sqlite"
        db = sqlite3.connect(index)
        source = sorted(db.execute("SELECT source FROM _watermarks").fetchall())[10][0]
        spine = top / source / "session.jsonl"
        lines = spine.read_bytes().splitlines(keepends=True)
        if change == "appended":
            spine.write_bytes(b"".join(lines) + lines[-1].replace(b'"seq":', b'"seq":9'))
        elif change == "torn":
            spine.write_bytes(b"".join(lines) + b'{"seq":')
        elif change == "same-length":
            spine.write_bytes(b"".join(lines[:-1]) + lines[-1].replace(b"2026", b"2027"))
        elif change == "cut":
            spine.write_bytes(b"".join(lines[:-1]))
        elif change == "emptied":
            spine.write_bytes(b"")
        elif change == "removed":
            spine.unlink()
        elif change == "directory":
            spine.unlink()
            spine.mkdir()
        elif change in ("link", "dangling"):
            target = top / "elsewhere.jsonl"
            target.write_bytes(b"".join(lines))
            spine.unlink()
            spine.symlink_to(target)
            if change == "dangling":
                target.unlink()
        elif change == "no-watermark":
            db.execute("DELETE FROM _watermarks WHERE source = ?", [source])
            db.commit()
        from heinzel.store.home import Home

        sources = Home(home).spine_files()
        before = {i: Home(home).spine_path(i) for i in Home(home).session_ids()}  # the old way
        marks = {
            str(s): (int(q), str(h), at, size)
            for s, q, h, at, size in db.execute(
                "SELECT source, seq, hash, at, size FROM _watermarks"
            )
        }
        plain = {s: (m[0], m[1]) for s, m in marks.items()}
        expected = {"appended", "cut", "same-length", "no-watermark"}
        if change == "link":  # refused, coded, both ways
            for spines in (sources, before):
                with pytest.raises(Exception, match="HZL001"):
                    open_current(index, spines, ["heinzel"])
            return
        assert (behind(plain, before) == [source]) == (change in expected)
        unsure, _ = _unsure(marks, sources)
        if change == "same-length":
            # the one change a stat cannot see: a last line rewritten to its own length by
            # hand reads as current to a listing (docs/spine.md); the writer's open sees it
            assert behind(plain, unsure) == []
            assert open_current(index, sources, ["heinzel"]) is not None
            return
        assert behind(plain, unsure) == behind(plain, before)
        for spines in (sources, before):
            reader = open_current(index, spines, ["heinzel"])
            assert (reader is None) == (change in expected)

    def test_every_spine_is_opened_once(
        self, small_home: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A current index over 24 spines: none opened (each one `stat`), none parsed,
        none behind."""
        home = small_home
        from heinzel.store.home import Home

        opened: list[str] = []
        real_open = os.open

        def counting(path: str, *args: object, **kwargs: object) -> int:
            opened.append(str(path))
            return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(os, "open", counting)
        monkeypatch.setattr("ledger.index.spine_tail", lambda path: pytest.fail(str(path)))
        reader = open_current(home / "heinzel" / "index.sqlite", Home(home).spine_files(), ())
        assert reader is not None
        assert [path for path in opened if path.endswith("session.jsonl")] == []


def test_todays_spend_reads_only_who_spent_today(
    home: Path, make_service: Callable[[], Service]
) -> None:
    """What each spent today (`heinzel.session.spend.today_each`, every listing) is searched
    by the day (``heinzel_cost_day``), not read off every row; an index made before that
    index is read as before and gets it when a writer next opens it."""
    index = home / "heinzel" / "index.sqlite"
    db = sqlite3.connect(index)
    with db:
        db.execute("DROP INDEX IF EXISTS heinzel_cost_day")  # as an older hz made it
    db.close()
    before = _hz(home, "--json")
    writer = make_service()
    assert writer.index.path == index  # the writer's open sets the index up again
    writer.close()
    assert _hz(home, "--json") == before
    db = sqlite3.connect(index)
    sql = "SELECT id, cost_today FROM heinzel WHERE cost_day = ? AND cost_today != 0"
    plan = [str(row[-1]) for row in db.execute(f"EXPLAIN QUERY PLAN {sql}", ["2026-10-26"])]
    db.close()
    assert plan == ["SEARCH heinzel USING INDEX heinzel_cost_day (cost_day=?)"], plan
