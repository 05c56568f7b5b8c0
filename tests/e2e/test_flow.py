"""The flow end to end (ADR 0049, staged plan step 13): Theo's ``my-row`` is unapproved at
Friday noon, so Priya's report proceeds stale and says so, and nobody is told but the two
users. Real ``hz`` processes, one per moment, the clock set by ``HZ_NOW``."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession
from starlette.testclient import TestClient

from heinzel.app import App
from heinzel.cli.demo import FIXTURES, expanded
from heinzel.web.server import create_app
from tests import forkhz
from tests.hz_mcp.client import session, text

BYSTANDER = """---
name: ana-notes
kind: responsibility
hz:
  owner: ana
  schedule: "0 16 * * FRI"
  timezone: Europe/Berlin
  requires: [tracker:read, documents:write]
  inputs:
    board: {from: tracker.issues_updated, args: {project: CHK}, window: 14d}
  outputs:
    notes: {asset: "file:ana-notes.md"}
  publishes: [documents.place_draft]
---

### Goal

Ana's notes from the board.

### Done when

- [ ] the board is in the notes
"""


class Home:
    """A home with Theo's ``my-row``, Priya's ``weekly-report`` (v3: it reads the team's
    rows, needed by Friday noon) and Ana's notes, which read nothing of theirs."""

    def __init__(self, root: Path, *, made: bool = False) -> None:
        """A new home in ``root`` (the fixtures copied), or the one ``made`` there before."""
        self.root = root
        self.home = root / "home"
        self.work = root / "work"
        if not made:
            shutil.copytree(FIXTURES, self.work)
            (self.work / "ana-notes.prose.md").write_text(BYSTANDER, encoding="utf-8")

    def env(self, now: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HZ_")}
        env.update(
            HZ_HOME=str(self.home),
            HZ_NOW=now,
            HZ_FIXTURE_SOURCES=str(self.work),
            HZ_MODEL="offline",
            HZ_MODEL_FAST="offline",
            HZ_APPROVER="theo",
            HZ_LOG_LEVEL="error",
            XDG_CONFIG_HOME=str(self.root / "config"),
        )
        return env

    def hz(self, now: str, *args: str, ok: bool = True, crash: str | None = None) -> str:
        env = self.env(now)
        if crash is not None:
            env["HZ_CRASH_AT"] = crash
        done = forkhz.hz(args, env, self.work)
        if crash is not None:
            assert done.returncode == 137, done.stderr
        elif ok:
            assert done.returncode == 0, done.stderr
        return done.stdout

    def spines(self) -> dict[str, list[dict[str, Any]]]:
        """Each Heinzelmännchen's spine by its name (from ``heinzel.renamed``/created)."""
        found: dict[str, list[dict[str, Any]]] = {}
        for path in (self.home / "heinzel").glob("hz-*/session.jsonl"):
            lines = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
            named = [e["data"]["name"] for e in lines if e["kind"] == "heinzel.created"]
            found[named[0]] = lines
        return found

    def listed(self, now: str) -> dict[str, dict[str, Any]]:
        rows = json.loads(self.hz(now, "heinzel", "list", "--json"))
        return {row["name"]: row for row in rows}

    def surfaces(self, now: str, words: str) -> tuple[int, int]:
        """How often ``words`` appear in MCP's ``heinzel_list`` and on the page's list."""
        env = {**self.env(now), "PATH": "/usr/bin:/bin"}

        async def listed(s: ClientSession) -> Any:
            result = await s.call_tool("heinzel_list", {})
            assert not result.is_error, text(result)
            return result.structured_content

        rows = session(env, self.work, listed)["heinzelmaennchen"]
        mcp = sum(str(n["message"]).count(words) for r in rows for n in r["notices"])
        app = create_app(
            lambda: App.from_environment(str(self.home), env),
            "t" * 32,
            hosts=["testserver"],
            idle_seconds=0,
        )
        with TestClient(app, follow_redirects=False) as client:
            assert client.get(f"/auth?token={'t' * 32}").status_code == 303
            page = client.get("/").text
        return mcp, page.count(words)

    def page(self, now: str, name: str) -> str:
        """The web head's page of ``name`` (`/h/NAME`) as the browser gets it."""
        env = self.env(now)
        app = create_app(
            lambda: App.from_environment(str(self.home), env),
            "t" * 32,
            hosts=["testserver"],
            idle_seconds=0,
        )
        with TestClient(app, follow_redirects=False) as client:
            assert client.get(f"/auth?token={'t' * 32}").status_code == 303
            return client.get(f"/h/{name}").text

    def setup(self) -> None:
        """Monday: all three created and approved; Thursday morning Theo's first row,
        approved by him."""
        for name in ("my-row", "weekly-report.v3", "ana-notes"):
            self.hz("2026-11-09T09:00:00Z", "heinzel", "new", "--from", f"{name}.prose.md")
        for name in ("my-row", "weekly-report", "ana-notes"):
            self.hz("2026-11-09T09:01:00Z", "approve", name)
        self.hz("2026-11-12T09:05:00Z", "heinzel", "wake", "my-row")
        self.hz("2026-11-12T09:30:00Z", "approve", "my-row")
        self.hz("2026-11-12T10:00:00Z", "system", "daemon", "tick")


@pytest.fixture(scope="module")
def monday(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The root of a home `Home.setup` played once per module (nine `hz` processes), kept
    as played beside it (``pristine``)."""
    root = tmp_path_factory.mktemp("flow") / "root"
    Home(root).setup()
    shutil.copytree(root, root.parent / "pristine")
    return root


@pytest.fixture
def home(monday: Path) -> Home:
    """The set-up home, put back as played before each test. In the same folder, not a
    copy elsewhere: its spines name that folder (the contracts' origin, where the drafts
    are placed), as a user's home names theirs."""
    shutil.rmtree(monday)
    shutil.copytree(monday.parent / "pristine", monday)
    return Home(monday, made=True)


def notices(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in lines if e["kind"] == "notice.posted"]


@pytest.mark.slow
class TestTheosFriday:
    """Nudged twice, one notice on every surface, the report proceeds stale, two users told."""

    def test_theos_row_is_late_and_priyas_report_proceeds_stale(self, home: Home) -> None:
        """Thursday 17:00 Theo's second row is drafted and never approved: a nudge a day
        before Friday noon and one two hours before (two keys, one notice shown); at 15:00
        the report reads the row as last approved, records ``input.fell_back`` once (a kill
        right after it is recovered without a second line or notice) and says so in its
        draft; only my-row and weekly-report are told; no escalation."""
        rows = (home.work / "team-rows.md").read_text("utf-8")
        assert "🧝 DRAFT" not in rows  # the first row is approved

        home.hz("2026-11-12T16:05:00Z", "system", "daemon", "tick")  # Thu 17:05 Berlin
        assert (home.work / "team-rows.md").read_text("utf-8").count("🧝 DRAFT (my-row") == 1
        home.hz("2026-11-12T16:10:00Z", "system", "daemon", "tick")  # nothing new
        home.hz("2026-11-13T09:05:00Z", "system", "daemon", "tick")  # Fri 10:05 Berlin

        theo = notices(home.spines()["my-row"])
        assert [n["data"]["reason"] for n in theo] == ["needed-by", "needed-by"]
        assert {n["data"]["to"] for n in theo} == {"theo"}
        assert [n["key"].rsplit(":", 1)[1] for n in theo] == ["1d", "2h"]
        assert (
            "weekly-report needs your approval of my-row's row by Fri 13 Nov 12:00"
            in (theo[0]["data"]["message"])
        )
        # one notice on the surfaces, however many nudges
        listed = home.listed("2026-11-13T09:06:00Z")
        assert [n["reason"] for n in listed["my-row"]["notices"]] == ["needed-by"]
        shown = json.loads(home.hz("2026-11-13T09:06:00Z", "heinzel", "show", "my-row", "--json"))
        assert [n["reason"] for n in shown["notices"]] == ["needed-by"]
        assert home.hz("2026-11-13T09:06:00Z", "heinzel", "list").count("needed-by") == 0
        assert home.hz("2026-11-13T09:06:00Z", "heinzel", "list").count("needs your approval") == 1
        assert home.surfaces("2026-11-13T09:06:00Z", "needs your approval") == (1, 1)
        # and on the upstream's own page, its next step a link to "Waiting on you"
        head = home.page("2026-11-13T09:06:00Z", "my-row").split('id="part-failure"')[0]
        assert head.count("needs your approval") == 1, head
        assert '<a href="#part-pending">Approve its draft</a>' in head

        # Fri 15:05 Berlin: killed right after input.fell_back, recovered by the next tick
        home.hz("2026-11-13T14:05:00Z", "system", "daemon", "tick", crash="after:input.fell_back")
        home.hz("2026-11-13T14:07:00Z", "system", "daemon", "tick")
        priya = home.spines()["weekly-report"]
        [fell] = [e for e in priya if e["kind"] == "input.fell_back"]
        approved = [e for e in home.spines()["my-row"] if e["kind"] == "approval.observed"]
        assert fell["data"] == {
            "input": "rows",
            "upstream": fell["data"]["upstream"],
            "output": "row",
            "deadline": "2026-11-13T11:00:00.000Z",
            "approved_fp": approved[0]["data"]["approved_fp"],
            "approved_at": approved[0]["ts"],
            "stale_s": 28 * 3600 + 5 * 60,  # Thu 10:00 to Fri 14:05
        }
        assert fell["data"]["upstream"].startswith("hz-")
        [placed] = [e for e in expanded(priya) if e["kind"] == "draft.placed"]
        report = (home.work / "weekly-report.md").read_text("utf-8")
        section = report[report.index(f"key={placed['key']}") :]
        assert "### stale" in section
        assert "rows is stale: my-row's row was not approved by Fri 13 Nov 12:00" in section
        assert "1 d 4 h old" in section
        # the row as last approved: Theo's pending draft is not in Priya's report
        pending = (home.work / "team-rows.md").read_text("utf-8")
        assert "🧝 DRAFT (my-row" in pending
        assert "🧝 DRAFT (my-row" not in section
        [told] = notices(priya)
        assert told["data"]["reason"] == "fell-back" and told["data"]["to"] == "priya"
        listed = home.listed("2026-11-13T14:06:00Z")
        assert [n["reason"] for n in listed["weekly-report"]["notices"]] == ["fell-back"]

        home.hz("2026-11-13T18:05:00Z", "system", "daemon", "tick")  # past the escalation
        spines = home.spines()
        assert notices(spines["ana-notes"]) == []
        told_to = {n["data"]["to"] for lines in spines.values() for n in notices(lines)}
        assert told_to == {"theo", "priya"}
        assert not [
            n for n in notices(spines["weekly-report"]) if n["data"]["reason"] == "escalated"
        ]

    def test_a_needed_by_notice_past_its_deadline_says_it_is_late(self, home: Home) -> None:
        """Friday 12:30 Berlin, Theo's row still pending: the notice stays (the day is not
        over) but says it is late, in list, show and the page, never "needs ... by"."""
        home.hz("2026-11-12T16:05:00Z", "system", "daemon", "tick")  # Thu 17:05 Berlin
        home.hz("2026-11-13T09:05:00Z", "system", "daemon", "tick")  # Fri 10:05 Berlin
        [before] = home.listed("2026-11-13T10:59:00Z")["my-row"]["notices"]
        assert before["message"].startswith("weekly-report needs your approval"), before
        late = "late: weekly-report needed your approval of my-row's row by Fri 13 Nov 12:00"
        [after] = home.listed("2026-11-13T11:30:00Z")["my-row"]["notices"]
        assert after["reason"] == "needed-by" and after["message"].startswith(late), after
        assert "before the deadline" not in after["next"]
        shown = home.hz("2026-11-13T11:30:00Z", "heinzel", "show", "my-row")
        assert late in shown and "needs your approval" not in shown, shown
        assert "needs your approval" not in home.page("2026-11-13T11:30:00Z", "my-row")

    def test_a_late_fallback_escalates_once(self, home: Home) -> None:
        """The report paused over Friday: it places no draft by 16:00 Berlin, so the
        escalation's handle is told, once, on the report's spine."""
        home.hz("2026-11-12T16:05:00Z", "system", "daemon", "tick")
        home.hz("2026-11-13T08:00:00Z", "heinzel", "pause", "weekly-report")
        home.hz("2026-11-13T15:05:00Z", "system", "daemon", "tick")  # Fri 16:05 Berlin
        home.hz("2026-11-13T15:10:00Z", "system", "daemon", "tick")
        escalated = [
            n for n in notices(home.spines()["weekly-report"]) if n["data"]["reason"] == "escalated"
        ]
        assert len(escalated) == 1
        assert escalated[0]["data"]["to"] == "priya"
        assert "the fallback is late too" in escalated[0]["data"]["message"]
        listed = home.listed("2026-11-13T15:11:00Z")
        assert "escalated" in [n["reason"] for n in listed["weekly-report"]["notices"]]

    def test_a_retired_reader_needs_nothing(self, home: Home) -> None:
        """Priya's report retired before Thursday: Theo's late row nudges nobody."""
        home.hz("2026-11-12T11:00:00Z", "heinzel", "retire", "weekly-report")
        home.hz("2026-11-12T16:05:00Z", "system", "daemon", "tick")
        home.hz("2026-11-13T09:05:00Z", "system", "daemon", "tick")
        assert notices(home.spines()["my-row"]) == []
