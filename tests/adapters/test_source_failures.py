"""Each source fails alone, through the real clients: a malformed calendar served as an
``.ics`` URL, GitHub's rate limits as GitHub sends them (githubkit on a loopback GitHub),
driven through ``hz system daemon tick`` as a timer runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from email.utils import formatdate
from pathlib import Path
from typing import Any

import pytest

from tests import forkhz, inprocess
from tests.adapters.github_server import FakeGitHub, pull
from tests.adapters.ics_server import ICSServer

HZ = Path(sys.executable).with_name("hz")
NOW = "2026-10-30T14:00:00Z"
LATER = "2026-10-30T14:00:30Z"  # inside the first backoff (a minute)

READER = """---
name: {name}
kind: responsibility
hz:
  namespace: me
  render_on_schedule: always
  requires: [{capability}:read, documents:write]
  inputs:
    {input}
  outputs:
    section: {{asset: "file:{name}.md"}}
  publishes: [documents.place_draft]
  agent: {{max_usd: 0.5}}
---

### Goal

A short summary of what the input holds.

### Maintains

- `section`: one bullet per item

### Done when

- [ ] every item appears in a bullet
"""
MEETINGS = READER.format(
    name="meetings", capability="calendar", input="events: {from: calendar.events, window: 7d}"
)
NOTES = READER.format(
    name="notes", capability="files", input="notes: {from: files.read, args: {path: notes.txt}}"
)
SHIPPED = READER.format(
    name="shipped",
    capability="code-host",
    input="prs: {from: code-host.merged_pull_requests, args: {repo: octo/app}, window: 7d}",
)

GOOD_EVENT = """BEGIN:VEVENT
UID:review
SUMMARY:Design review
DTSTART:20261027T130000Z
DTEND:20261027T140000Z
END:VEVENT"""
BAD_EVENTS = {
    "rrule": GOOD_EVENT.replace("END:VEVENT", "RRULE:FREQ=SOMETIMES\nEND:VEVENT"),
    "dtstart": GOOD_EVENT.replace("DTSTART:20261027T130000Z", "DTSTART:garbage"),
}


def calendar(*events: str) -> str:
    body = "\n".join(events)
    text = f"BEGIN:VCALENDAR\nVERSION:2.0\nPRODID:-//hz tests//EN\n{body}\nEND:VCALENDAR\n"
    return text.replace("\n", "\r\n")


def _env(tmp_path: Path, now: str) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "HZ_HOME": str(tmp_path / "home"),
        "HZ_NOW": now,
        "HZ_CONFIG": str(tmp_path / "config.toml"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "GH_TOKEN": "ghp_loopback",
        "HZ_TESTING": "1",
    }


def hz(tmp_path: Path, *args: str, now: str = NOW) -> subprocess.CompletedProcess[str]:
    return forkhz.run(
        [str(HZ), *args],
        env=_env(tmp_path, now),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )


def approved(tmp_path: Path, name: str, text: str) -> None:
    """``name`` created and approved: set-up, in this process (tests/inprocess.py); the
    ticks, doctor and wakes under test run the real ``hz``."""
    (tmp_path / f"{name}.md").write_text("# Report\n")
    (tmp_path / f"{name}.prose.md").write_text(text)
    env = _env(tmp_path, NOW)
    made = inprocess.hz(["heinzel", "new", "--from", f"{name}.prose.md"], env, tmp_path)
    assert made.returncode == 0, made.stderr
    assert inprocess.hz(["approve", name], env, tmp_path).returncode == 0


def tick(tmp_path: Path, *more: str, now: str = NOW) -> tuple[int, dict[str, Any], str]:
    done = hz(tmp_path, "system", "daemon", "tick", "--json", *more, now=now)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout), done.stderr


def ended(report: dict[str, Any], name: str) -> list[str | None]:
    return [e["disposition"] for w in report["woken"] if w["name"] == name for e in w["ended"]]


@pytest.fixture
def published() -> Iterator[ICSServer]:
    server = ICSServer(calendar(GOOD_EVENT)).start()
    yield server
    server.stop()


@pytest.mark.parametrize("bad", sorted(BAD_EVENTS))
def test_a_malformed_calendar_costs_only_its_readers_their_turn(
    published: ICSServer, tmp_path: Path, bad: str
) -> None:
    """An invite with ``RRULE:FREQ=SOMETIMES`` or ``DTSTART:garbage`` in an ``.ics`` URL is
    HZH171 for the calendar's reader alone: the other Heinzelmännchen's turn runs, the tick
    exits 0 and says so (--strict exits 1), doctor names the failing source, a wake by
    hand says HZH171, and the tick does not ask the calendar again within its backoff.
    (A real Radicale refuses such an event at PUT, so a CalDAV calendar can't hold one.)"""
    published.text = calendar(GOOD_EVENT, BAD_EVENTS[bad].replace("review", "invite"))
    (tmp_path / "config.toml").write_text(
        f'[adapters.calendar]\nbackend = "ics"\nurl = "{published.url}"\n'
    )
    (tmp_path / "notes.txt").write_text("ship the export\n")
    approved(tmp_path, "meetings", MEETINGS)
    approved(tmp_path, "notes", NOTES)

    status, report, stderr = tick(tmp_path)
    assert status == 0, stderr
    assert ended(report, "notes") == ["drafted"]
    assert ended(report, "meetings") == []
    codes = [(e["name"], e["code"]) for e in report["errors"]]
    assert codes == [("meetings", "HZH171")]
    assert "HZH171: meetings: input events: calendar:" in stderr
    assert report["problems"] == 1
    assert len(published.seen) == 1
    doctor = json.loads(hz(tmp_path, "system", "doctor", "--json").stdout)
    sources = {c["name"]: c for c in doctor["checks"]}["sources"]
    assert (sources["ok"], sources["code"]) == (False, "HZH171")
    assert "calendar.events" in sources["detail"]
    woken = hz(tmp_path, "heinzel", "wake", "meetings")  # by hand: asked at once, coded
    assert (woken.returncode, woken.stderr[:15]) == (1, "HZH171: calenda"), woken.stderr
    assert len(published.seen) == 2

    status, report, stderr = tick(tmp_path, "--strict", now=LATER)
    assert status == 1  # --strict: the calendar still fails
    assert [e["code"] for e in report["errors"]] == ["HZH171"]
    assert "asked again after" in report["errors"][0]["message"]
    assert len(published.seen) == 2  # inside the backoff: no request

    published.text = calendar(GOOD_EVENT)  # the invite fixed
    status, report, stderr = tick(tmp_path, now="2026-10-30T14:05:00Z")
    assert (status, report["errors"]) == (0, []), stderr
    assert ended(report, "meetings") == ["drafted"]
    assert "Design review" in (tmp_path / "meetings.md").read_text()
    doctor = json.loads(hz(tmp_path, "system", "doctor", "--json").stdout)
    assert {c["name"]: c for c in doctor["checks"]}["sources"]["ok"] is True


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    server = FakeGitHub(
        routes={"/repos/octo/app/pulls": [pull(42, "2026-10-29T10:00:00Z", "2026-10-29T10:00:00Z")]}
    ).start()
    yield server
    server.stop()


LIMITS = {
    "retry-after-date": (
        403,
        {"Retry-After": "DATE"},
        {"message": "You have exceeded a secondary rate limit."},
    ),
    "429-bare": (429, {}, {"message": "Too Many Requests"}),
    "403-secondary-bare": (
        403,
        {},
        {"message": "You have exceeded a secondary rate limit. Please wait a few minutes."},
    ),
}


@pytest.mark.parametrize("limit", sorted(LIMITS))
def test_github_rate_limits_in_every_form_wait_and_spare_the_others(
    github: FakeGitHub, tmp_path: Path, limit: str
) -> None:
    """``Retry-After`` as an HTTP date, a bare ``429`` and a ``403`` secondary rate limit
    without headers are HZH160 (never a crash, never HZH162/HZH163), the other
    Heinzelmännchen's turn runs, and the next tick inside the wait sends GitHub nothing."""
    status, headers, message = LIMITS[limit]
    if "Retry-After" in headers:
        headers = {"Retry-After": formatdate(__import__("time").time() + 600, usegmt=True)}
    github.raw["/repos/octo/app/pulls"] = (status, headers, message)
    (tmp_path / "config.toml").write_text(
        f'[adapters.code-host]\nbackend = "github"\nbase_url = "{github.url}"\n'
    )
    (tmp_path / "notes.txt").write_text("ship the export\n")
    approved(tmp_path, "shipped", SHIPPED)
    approved(tmp_path, "notes", NOTES)

    code, report, stderr = tick(tmp_path)
    assert code == 0, stderr
    assert [(e["name"], e["code"]) for e in report["errors"]] == [("shipped", "HZH160")]
    assert ended(report, "notes") == ["drafted"]
    assert len(github.seen) == 1

    code, report, stderr = tick(tmp_path, now=LATER)
    assert [e["code"] for e in report["errors"]] == ["HZH160"]
    assert len(github.seen) == 1  # not asked again inside the wait
    entries = [
        json.loads(p.read_text())
        for p in (tmp_path / "home" / "heinzel" / "sources").glob("*.json")
    ]
    kept = [e["failed"] for e in entries if "failed" in e]
    assert [(f["code"], f["attempts"]) for f in kept] == [("HZH160", 1)]
    assert kept[0]["retry_at"] >= "2026-10-30T14:01:00"


def test_the_github_cache_keeps_no_address_and_housekeeping_prunes_it(tmp_path: Path) -> None:
    """What the GitHub adapter keeps on disk is cut to what it needs: no e-mail address
    (not the user's, not one in a body), the body cut at 4000 characters; a tick a day
    later prunes the kept listing once it is older than ``retention_days``."""
    body = "Reported by dana@example.net, see the log\n" + "x" * 6000
    user = {"login": "priya", "email": "priya@example.com", "id": 7}
    server = FakeGitHub(
        routes={
            "/repos/octo/app/pulls": [
                pull(42, "2026-10-29T10:00:00Z", "2026-10-29T10:00:00Z", body=body, user=user)
            ]
        }
    ).start()
    try:
        (tmp_path / "config.toml").write_text(
            f'[adapters.code-host]\nbackend = "github"\nbase_url = "{server.url}"\n'
        )
        approved(tmp_path, "shipped", SHIPPED)
        code, report, stderr = tick(tmp_path)
        assert (code, report["errors"]) == (0, []), stderr
        assert ended(report, "shipped") == ["drafted"]
        kept = sorted((tmp_path / "home" / "heinzel" / "http" / "github").glob("*.json"))
        assert kept
        text = "".join(p.read_text() for p in kept)
        assert "@example" not in text
        assert "x" * 3000 in text and "x" * 4001 not in text

        for path in kept:
            os.utime(path, (1_500_000_000, 1_500_000_000))  # written long ago
        code, report, stderr = tick(tmp_path, now="2026-10-31T14:00:00Z")
        assert code == 0, stderr
        assert 304 in server.statuses()
        assert report["pruned"] >= 1
        assert [p for p in kept if p.exists()] == []
    finally:
        server.stop()


def test_a_rate_limit_waits_as_long_as_its_line_says_however_often_it_recurs(
    github: FakeGitHub, tmp_path: Path
) -> None:
    """GitHub answers ``403`` with ``Retry-After: 120`` three ticks in a row: each tick's
    HZH160 line says when the limit resets, and the source is asked again then, not after
    a doubled backoff (4 min on the third) the line never mentioned."""
    import re
    from datetime import datetime

    github.raw["/repos/octo/app/pulls"] = (403, {"Retry-After": "120"}, {"message": "rate limit"})
    (tmp_path / "config.toml").write_text(
        f'[adapters.code-host]\nbackend = "github"\nbase_url = "{github.url}"\n'
    )
    approved(tmp_path, "shipped", SHIPPED)
    for now in (NOW, "2026-10-30T14:03:00Z", "2026-10-30T14:06:00Z"):
        _code, report, _stderr = tick(tmp_path, now=now)
        [error] = report["errors"]
        said = int(re.search(r"resets in (\d+) s", error["message"]).group(1))  # type: ignore[union-attr]
        [entry] = [
            json.loads(p.read_text())
            for p in (tmp_path / "home" / "heinzel" / "sources").glob("*.json")
        ]
        failed = entry["failed"]
        kept = datetime.fromisoformat(
            failed["retry_at"].replace("Z", "+00:00")
        ) - datetime.fromisoformat(failed["at"].replace("Z", "+00:00"))
        assert kept.total_seconds() <= said + 1, (failed, said)
    assert failed["attempts"] == 3
