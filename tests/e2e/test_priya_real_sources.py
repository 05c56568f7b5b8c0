"""The worked example on real adapters: Priya's contract reads merged pull requests and
issues from a loopback GitHub and her calendar from a real Radicale over CalDAV, through
the ``hz`` executable, and a tick killed between staging and the turn never fetches again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import forkhz
from tests.adapters.github_server import FakeGitHub, issue, pull
from tests.adapters.test_calendars import ICS, per_uid, radicale  # noqa: F401 (fixture)

ROOT = Path(__file__).resolve().parents[2]
HZ = Path(sys.executable).with_name("hz")
TOKEN = "ghp_priyaLoopbackToken42"
PASSWORD = "s3cret"
FRIDAY = "2026-10-30T14:00:30Z"  # just after 15:00 Berlin, Priya's slot


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    server = FakeGitHub(
        routes={
            "/repos/octo/app/pulls": [
                pull(42, "2026-10-29T10:00:00Z", "2026-10-29T10:00:00Z", title="Rounding fix"),
                pull(41, "2026-10-27T10:00:00Z", "2026-10-27T10:00:00Z", title="Faster export"),
                pull(40, "2026-10-01T10:00:00Z", "2026-10-01T10:00:00Z", title="Old thing"),
            ],
            "/repos/octo/app/issues": [
                issue(77, "2026-10-28T09:00:00Z", title="Refund totals off by a cent"),
                issue(12, "2026-09-01T09:00:00Z", title="Ancient issue"),
            ],
        }
    ).start()
    yield server
    server.stop()


class Priya:
    """Priya's folder, configuration and home; `hz` runs the way she would run it."""

    def __init__(self, root: Path, github: FakeGitHub, caldav_url: str) -> None:
        self.root = root
        contract = (ROOT / "fixtures" / "priya" / "weekly-report.prose.md").read_text("utf-8")
        contract = contract.replace("repo: acme/checkout", "repo: octo/app")
        contract = contract.replace("project: CHK", "project: octo/app")
        contract = contract.replace("calendar: priya", "calendar: work")
        (root / "weekly-report.prose.md").write_text(contract, encoding="utf-8")
        (root / "weekly-report.md").write_text("# Checkout weekly\n", encoding="utf-8")
        (root / "config.toml").write_text(
            f'[adapters.code-host]\nbackend = "github"\nbase_url = "{github.url}"\n\n'
            f'[adapters.tracker]\nbackend = "github"\nbase_url = "{github.url}"\n\n'
            f'[adapters.calendar]\nbackend = "caldav"\nurl = "{caldav_url}"\n'
            f'username = "priya"\npassword_env = "PRIYA_CALDAV"\ncalendar = "work"\n'
            f'attendee = "priya@example.com"\n',
            encoding="utf-8",
        )

    def hz(self, *args: str, now: str, **extra: str) -> subprocess.CompletedProcess[str]:
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(self.root),
            "HZ_HOME": str(self.root / "home"),
            "HZ_CONFIG": str(self.root / "config.toml"),
            "XDG_CONFIG_HOME": str(self.root / "xdg"),
            "HZ_NOW": now,
            "HZ_MODEL": "offline",
            "HZ_APPROVER": "priya",
            "GH_TOKEN": TOKEN,
            "PRIYA_CALDAV": PASSWORD,
            **extra,
        }
        done = forkhz.run(
            [str(HZ), *args], env=env, cwd=self.root, capture_output=True, text=True, timeout=180
        )
        assert "Traceback" not in done.stderr, done.stderr
        return done

    def tick(self, now: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return self.hz("system", "daemon", "tick", "--json", now=now, **extra)

    def turns(self) -> list[dict[str, Any]]:
        shown = self.hz("heinzel", "show", "weekly-report", "--json", now=FRIDAY)
        assert shown.returncode == 0, shown.stderr
        listed: list[dict[str, Any]] = json.loads(shown.stdout)["turns"]
        return listed


@pytest.mark.kill
@pytest.mark.slow
def test_priyas_friday_on_github_and_caldav_survives_a_kill_without_refetching(
    github: FakeGitHub,
    radicale: str,  # noqa: F811 (the fixture imported above)
    tmp_path: Path,
) -> None:
    """Friday's tick drafts this week's PRs, issues and meetings into her report; killed after
    turn.started, the next tick finishes the turn from the staged inputs with no request, and
    a tick after the recheck costs one 304 per listing."""
    import caldav

    client = caldav.DAVClient(url=radicale, username="priya", password=PASSWORD)
    work = client.principal().make_calendar(name="work")
    for one in per_uid(ICS):
        work.save_event(one)
    priya = Priya(tmp_path, github, radicale)

    created = priya.hz(
        "heinzel", "new", "--from", "weekly-report.prose.md", now="2026-10-29T08:00:00Z"
    )
    assert created.returncode == 0, created.stderr
    assert priya.hz("approve", "weekly-report", now="2026-10-29T08:01:00Z").returncode == 0
    github.seen.clear()

    killed = priya.tick(FRIDAY, HZ_CRASH_AT="after:turn.started")
    assert killed.returncode == 137
    staged = sorted((s.path, s.status) for s in github.seen)
    assert staged == [
        ("/repos/octo/app/issues", 200),  # one page of two (the second is out of the window)
        ("/repos/octo/app/pulls", 200),  # two pages of two: the third PR is older
        ("/repos/octo/app/pulls", 200),
    ]
    assert "Rounding fix" not in (tmp_path / "weekly-report.md").read_text("utf-8")

    github.seen.clear()
    again = priya.tick(FRIDAY)
    assert again.returncode == 0, again.stderr
    assert github.seen == []  # the inputs staged before the kill, not fetched again
    [turn] = [t for t in priya.turns() if t["disposition"] == "drafted"]
    assert turn is not None
    report = (tmp_path / "weekly-report.md").read_text("utf-8")
    assert report.count("🧝 DRAFT (weekly-report v1)") == 1
    for shown in ("Rounding fix", "Faster export", "Refund totals off by a cent", "Standup"):
        assert shown in report
    for hidden in ("Old thing", "Ancient issue", "Offsite", "Cancelled sync"):
        assert hidden not in report

    later = priya.tick("2026-10-30T16:00:00Z")  # the 1h recheck is due: conditional requests
    assert later.returncode == 0, later.stderr
    assert sorted(s.status for s in github.seen) == [304, 304]
    assert {s.authorization for s in github.seen} == {f"token {TOKEN}"}
    leaked = [
        p
        for p in (tmp_path / "home").rglob("*")
        if p.is_file()
        and (
            TOKEN in p.read_text("utf-8", "replace") or PASSWORD in p.read_text("utf-8", "replace")
        )
    ]
    assert leaked == []


@pytest.mark.kill
@pytest.mark.slow
def test_a_tick_killed_between_staging_and_turn_started_never_fetches_again(
    github: FakeGitHub,
    radicale: str,  # noqa: F811 (the fixture imported above)
    tmp_path: Path,
) -> None:
    """Killed at ``at:staged`` (the source cache written, no ``turn.started``), the next
    tick makes zero requests to GitHub and drafts Friday's section once from the cache."""
    import caldav

    client = caldav.DAVClient(url=radicale, username="priya", password=PASSWORD)
    work = client.principal().make_calendar(name="work")
    for one in per_uid(ICS):
        work.save_event(one)
    priya = Priya(tmp_path, github, radicale)
    created = priya.hz(
        "heinzel", "new", "--from", "weekly-report.prose.md", now="2026-10-29T08:00:00Z"
    )
    assert created.returncode == 0, created.stderr
    assert priya.hz("approve", "weekly-report", now="2026-10-29T08:01:00Z").returncode == 0
    github.seen.clear()

    killed = priya.tick(FRIDAY, HZ_CRASH_AT="at:staged")
    assert killed.returncode == 137
    assert len(github.seen) == 3  # the issues page and two pull-request pages, staged
    assert priya.turns() == []  # killed before any turn.started
    assert list((tmp_path / "home" / "heinzel" / "sources").rglob("*"))

    github.seen.clear()
    again = priya.tick(FRIDAY)
    assert again.returncode == 0, again.stderr
    assert github.seen == []
    assert [t["disposition"] for t in priya.turns()] == ["drafted"]
    report = (tmp_path / "home").parent.joinpath("weekly-report.md").read_text("utf-8")
    assert report.count("🧝 DRAFT (weekly-report v1)") == 1
    assert "Rounding fix" in report and "Refund totals off by a cent" in report
