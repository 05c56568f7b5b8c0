"""What a person reads of a Heinzelmännchen's memory, through the `hz` executable: its
latest summary (ADR 0049 statements 8, 19), lines hidden from the model with `forget`
(statement 18's ``context.edit``), and tokens beside cost (statement 20)."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from ledger.spine import read_events
from tests.forkhz import hz
from tests.hz_mcp.client import session
from tests.turns.conftest import CONTRACT


@pytest.fixture(scope="module")
def approved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """An approved notes-digest whose summary budget is one turn, in a home of its own,
    made once per module and kept as approved beside it (``pristine``)."""
    tmp_path = tmp_path_factory.mktemp("person-reads") / "folder"
    tmp_path.mkdir()
    (tmp_path / "notes.txt").write_text("one\ntwo\n", encoding="utf-8")
    (tmp_path / "report.md").write_text("# Report\n", encoding="utf-8")
    (tmp_path / "hz.toml").write_text("[heinzel]\nsummary_after_turns = 1\n", encoding="utf-8")
    contract = tmp_path / "digest.prose.md"
    contract.write_text(CONTRACT.format(render="always", done_when="every item is covered"))
    env = {
        **os.environ,
        "HZ_HOME": str(tmp_path / "home"),
        "HZ_NOW": "2026-10-30T14:00:00Z",
        "HZ_CONFIG": str(tmp_path / "hz.toml"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
    }
    assert hz(["heinzel", "new", "--from", str(contract)], env, tmp_path).returncode == 0
    assert hz(["approve", "notes-digest"], env, tmp_path).returncode == 0
    shutil.copytree(tmp_path, tmp_path.parent / "pristine", symlinks=True)
    return {"env": env, "cwd": tmp_path}


@pytest.fixture
def home(approved: dict[str, Any]) -> dict[str, Any]:
    """The approved home put back as approved, in its place (a home names its documents
    by their paths), for each test."""
    folder: Path = approved["cwd"]
    shutil.rmtree(folder)
    shutil.copytree(folder.parent / "pristine", folder, symlinks=True)
    return {"env": dict(approved["env"]), "cwd": folder}


def run(home: dict[str, Any], *args: str, now: str | None = None) -> Any:
    env = dict(home["env"], **({"HZ_NOW": now} if now else {}))
    return hz(list(args), env, home["cwd"])


def wake(home: dict[str, Any], day: int) -> None:
    woken = run(home, "heinzel", "wake", "notes-digest", now=f"2026-11-{day:02d}T09:00:00Z")
    assert woken.returncode == 0, woken.stderr


def spine(home: dict[str, Any]) -> Path:
    [found] = (home["cwd"] / "home" / "heinzel").glob("hz-*/session.jsonl")
    return found


class TestSummaryShown:
    def test_show_has_no_summary_before_the_first(self, home: dict[str, Any]) -> None:
        """Before any summary, `show` says so in words and `--json` has null."""
        shown = run(home, "heinzel", "show", "notes-digest", "--json")
        assert json.loads(shown.stdout)["summary"] is None
        text = run(home, "heinzel", "show", "notes-digest").stdout
        assert "what it knows: no summary yet" in text

    def test_show_gives_the_latest_summary_in_its_words(self, home: dict[str, Any]) -> None:
        """Past the summary budget a turn writes a summary; `show` gives the latest one
        (its seq is the spine's last summary.written) with its fields."""
        for day in (2, 3, 4):
            wake(home, day)
        written = [e for e in read_events(spine(home)) if e.kind == "summary.written"]
        assert written, "the offline model writes a summary when one is due"
        shown = json.loads(run(home, "heinzel", "show", "notes-digest", "--json").stdout)
        summary = shown["summary"]
        assert summary["seq"] == written[-1].seq
        assert summary["asset"] == written[-1].data["asset"]
        assert summary["wants"] == written[-1].data["wants"]
        text = run(home, "heinzel", "show", "notes-digest").stdout
        assert f"what it knows (summary #{written[-1].seq}" in text
        assert f"asset: {written[-1].data['asset']}" in text

    def test_mcp_show_gives_the_same_summary(self, home: dict[str, Any]) -> None:
        """An agent asking over MCP (the SDK's client, `hz mcp`) reads the same summary."""
        for day in (2, 3, 4):
            wake(home, day)
        shown = json.loads(run(home, "heinzel", "show", "notes-digest", "--json").stdout)

        async def body(s: Any) -> Any:
            return await s.call_tool("heinzel_show", {"name": "notes-digest"})

        answer = session(home["env"], home["cwd"], body)
        assert not answer.is_error
        assert answer.structured_content["summary"] == shown["summary"]
        assert answer.structured_content["summary"]["seq"] > 0


def turn_ids(home: dict[str, Any]) -> list[str]:
    shown = json.loads(run(home, "heinzel", "show", "notes-digest", "--json").stdout)
    return [t["id"] for t in shown["turns"]]


def seen_by(home: dict[str, Any], turn: str) -> str:
    """The model's messages of ``turn`` as its body keeps them (the context it was given)."""
    [body] = (home["cwd"] / "home" / "heinzel").glob(f"hz-*/turns/{turn}.jsonl")
    return body.read_text(encoding="utf-8")


class TestForget:
    def test_a_forgotten_turn_leaves_later_contexts_and_stays_in_the_record(
        self, home: dict[str, Any]
    ) -> None:
        """`forget NAME TURN` writes one context.edit; the next turn's context has none of
        that turn's lines, the turn before it had them, and the spine still holds them."""
        wake(home, 2)
        wake(home, 3)
        first, second = turn_ids(home)
        assert f"turn={first}" in seen_by(home, second)
        before = [e.seq for e in read_events(spine(home)) if e.turn == first]
        forgot = run(home, "heinzel", "forget", "notes-digest", first, "--json")
        assert forgot.returncode == 0, forgot.stderr
        assert json.loads(forgot.stdout)["target"] == f"turn:{first}"
        wake(home, 4)
        third = turn_ids(home)[-1]
        assert f"turn={first}" not in seen_by(home, third)
        assert f"turn={second}" in seen_by(home, third)
        events = list(read_events(spine(home)))
        assert [e.seq for e in events if e.turn == first] == before
        edits = [e.data for e in events if e.kind == "context.edit"]
        assert edits == [{"target": f"turn:{first}", "replacement": None}]

    def test_forget_while_another_process_holds_the_lock_takes_effect_next_turn(
        self, home: dict[str, Any]
    ) -> None:
        """`forget` while a turn runs elsewhere (the test holds the spine's lock as its
        process would): exit 0, never HZL010, the edit queued; the next turn writes the
        `context.edit` before it starts and its context has none of the forgotten turn."""
        wake(home, 2)
        wake(home, 3)
        first, second = turn_ids(home)
        fd = os.open(spine(home).parent / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            forgot = run(home, "heinzel", "forget", "notes-digest", first, "--json")
        finally:
            os.close(fd)
        assert forgot.returncode == 0, forgot.stderr
        said = json.loads(forgot.stdout)
        assert said["target"] == f"turn:{first}"
        assert said["queued"].startswith("a turn runs now")
        assert [e for e in read_events(spine(home)) if e.kind == "context.edit"] == []
        wake(home, 4)
        third = turn_ids(home)[-1]
        assert f"turn={first}" not in seen_by(home, third)
        assert f"turn={second}" in seen_by(home, third)
        events = list(read_events(spine(home)))
        [edit] = [e for e in events if e.kind == "context.edit"]
        assert edit.data == {"target": f"turn:{first}", "replacement": None}
        [started] = [e for e in events if e.kind == "turn.started" and e.turn == third]
        assert edit.seq < started.seq
        wake(home, 5)  # written once
        assert len([e for e in read_events(spine(home)) if e.kind == "context.edit"]) == 1

    def test_a_line_can_be_replaced_by_a_short_text(self, home: dict[str, Any]) -> None:
        """`forget NAME SEQ --instead TEXT`: the model sees the text in that line's place."""
        wake(home, 2)
        started = next(e.seq for e in read_events(spine(home)) if e.kind == "turn.started")
        said = run(home, "heinzel", "forget", "notes-digest", str(started), "--instead", "ignore")
        assert said.returncode == 0, said.stderr
        assert f"line #{started} as: ignore" in said.stdout
        wake(home, 3)
        seen = seen_by(home, turn_ids(home)[-1])
        assert f"#{started} (edited) ignore" in seen
        assert f"#{started} turn.started" not in seen

    def test_the_hint_of_a_bad_target_leads_to_the_seqs(self, home: dict[str, Any]) -> None:
        """HZH400's hint names `hz heinzel report`, and report prints each turn's seqs: a
        seq read there is one forget takes."""
        wake(home, 2)
        refused = run(home, "heinzel", "forget", "notes-digest", "99999")
        assert "`hz heinzel report notes-digest`" in refused.stderr, refused.stderr
        reported = run(home, "heinzel", "report", "notes-digest")
        started = next(e.seq for e in read_events(spine(home)) if e.kind == "turn.started")
        assert f"  lines: seq {started} to " in reported.stdout, reported.stdout
        as_json = json.loads(run(home, "heinzel", "report", "notes-digest", "--json").stdout)
        assert as_json["turns"][0]["seqs"][0] == started
        last = as_json["turns"][0]["seqs"][1]
        said = run(home, "heinzel", "forget", "notes-digest", str(last))
        assert said.returncode == 0, said.stderr

    def test_bad_targets_are_refused_and_nothing_is_written(self, home: dict[str, Any]) -> None:
        """An unknown turn, a seq past the end, a second identical forget and a multi-line
        --instead are coded errors with exit 1, and the spine is unchanged."""
        wake(home, 2)
        [turn] = turn_ids(home)
        assert run(home, "heinzel", "forget", "notes-digest", turn).returncode == 0
        size = spine(home).stat().st_size
        for args, code in (
            (["tn-01NOSUCHTURN00000000000000"], "HZH400"),
            (["99999"], "HZH400"),
            ([turn], "HZH402"),
            (["1", "--instead", "two\nlines"], "HZH401"),
        ):
            refused = run(home, "heinzel", "forget", "notes-digest", *args)
            assert refused.returncode == 1, args
            assert refused.stderr.startswith(f"{code}: "), refused.stderr
            assert "hint: " in refused.stderr
        assert spine(home).stat().st_size == size
        verified = run(home, "heinzel", "verify", "notes-digest")
        assert verified.returncode == 0, verified.stdout


class TestTokensInAnOlderIndex:
    def test_an_index_made_before_the_token_columns_gets_them_on_open(
        self, home: dict[str, Any]
    ) -> None:
        """An index whose ``turns`` table predates ``tokens``, ``tokens_cached`` and
        ``usage_usd`` (an upgrade of hz over an existing home) is given them when opened:
        `show` and a wake work, and `reindex` fills the old turns again."""
        import sqlite3

        wake(home, 2)
        index = home["cwd"] / "home" / "heinzel" / "index.sqlite"
        with sqlite3.connect(index) as db:
            for column in ("tokens", "tokens_cached", "usage_usd"):
                db.execute(f"ALTER TABLE turns DROP COLUMN {column}")
        shown = run(home, "heinzel", "show", "notes-digest", "--json")
        assert shown.returncode == 0, shown.stderr
        assert [t["tokens"] for t in json.loads(shown.stdout)["turns"]] == [0]
        wake(home, 3)
        assert run(home, "heinzel", "reindex").returncode == 0
        after = json.loads(run(home, "heinzel", "show", "notes-digest", "--json").stdout)
        assert len(after["turns"]) == 2


class TestThePage:
    def test_the_page_shows_what_it_knows_and_the_months_cost_by_cause(
        self, home: dict[str, Any]
    ) -> None:
        """The web head's page of one (the server the person opens) shows its latest
        summary's fields under "What it knows", the same record `show` gives, and the
        month's cost by cause; before the first summary it says there is none."""
        from starlette.testclient import TestClient

        from tests.web.conftest import TOKEN, web_app

        root = home["cwd"] / "home"
        env = dict(home["env"], HZ_NOW="2026-11-05T09:00:00Z")
        children: list[Any] = []
        [hid] = [p.parent.name for p in (root / "heinzel").glob("hz-*/session.jsonl")]
        with TestClient(web_app(root, children, env), follow_redirects=False) as client:
            assert client.get(f"/auth?token={TOKEN}").status_code == 303
            before = client.get(f"/h/{hid}").text
            assert "What it knows" in before and "No summary yet" in before
            for day in (2, 3, 4):
                wake(home, day)
            shown = json.loads(run(home, "heinzel", "show", "notes-digest", "--json").stdout)
            page = client.get(f"/h/{hid}").text
        summary = shown["summary"]
        assert f"Its latest summary (#{summary['seq']}" in page
        assert f"<dd>{summary['asset']}</dd>" in page
        assert "No summary yet" not in page
        assert "this month</dt><dd>0.00 USD (0.00 asked)" in page
