"""The ``hz`` executable reading merged pull requests from a loopback GitHub configured in
``[adapters.code-host]``: the wake drafts them, the token stays out of every file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import forkhz
from tests.adapters.github_server import FakeGitHub, pull

HZ = Path(sys.executable).with_name("hz")
TOKEN = "ghp_loopbackSecret123"
CONTRACT = """---
name: shipped
kind: responsibility
hz:
  namespace: me
  render_on_schedule: always
  requires: [code-host:read, documents:write]
  inputs:
    merged_prs:
      {from: code-host.merged_pull_requests, args: {repo: octo/app}, window: 7d, recheck: 1h}
  outputs:
    section: {asset: "file:report.md"}
  publishes: [documents.place_draft]
  agent: {max_usd: 0.5}
---

### Goal

What shipped this week, at the end of the report.

### Maintains

- `section`: one bullet per merged pull request

### Done when

- [ ] every pull request of `merged_prs` appears in a bullet
"""


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    server = FakeGitHub(
        routes={
            "/repos/octo/app/pulls": [
                pull(42, "2026-10-29T10:00:00Z", "2026-10-29T10:00:00Z", title="Rounding fix"),
                pull(41, "2026-10-27T10:00:00Z", "2026-10-27T10:00:00Z", title="Faster export"),
                pull(40, "2026-10-01T10:00:00Z", "2026-10-01T10:00:00Z", title="Old thing"),
            ]
        }
    ).start()
    yield server
    server.stop()


def hz(
    tmp_path: Path, *args: str, now: str = "2026-10-30T14:00:00Z"
) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "HZ_HOME": str(tmp_path / "home"),
        "HZ_NOW": now,
        "HZ_CONFIG": str(tmp_path / "config.toml"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "GH_TOKEN": TOKEN,
        "HZ_TESTING": "1",
    }
    return forkhz.run(
        [str(HZ), *args], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )


class TestHzReadsGitHub:
    def test_wake_drafts_the_merged_prs_and_doctor_lists_the_adapter(
        self, fake: FakeGitHub, tmp_path: Path
    ) -> None:
        """new, approve, wake: the draft names this week's PRs only; a wake after the recheck
        costs one 304; doctor says code-host is github; the token is in no file."""
        (tmp_path / "config.toml").write_text(
            f'[adapters.code-host]\nbackend = "github"\nbase_url = "{fake.url}"\n'
        )
        (tmp_path / "report.md").write_text("# Report\n")
        (tmp_path / "shipped.prose.md").write_text(CONTRACT)
        assert hz(tmp_path, "heinzel", "new", "--from", "shipped.prose.md").returncode == 0
        assert hz(tmp_path, "approve", "shipped").returncode == 0
        woken = hz(tmp_path, "heinzel", "wake", "shipped", "--json")
        assert woken.returncode == 0, woken.stderr
        assert json.loads(woken.stdout)["disposition"] == "drafted"
        report = (tmp_path / "report.md").read_text()
        assert "Rounding fix" in report
        assert "Faster export" in report
        assert "Old thing" not in report
        assert {s.authorization for s in fake.seen} == {f"token {TOKEN}"}

        fake.seen.clear()
        hz(tmp_path, "heinzel", "wake", "shipped", "--message", "again")
        assert fake.statuses() == []  # the recheck (1h) is not due: served from the cache
        later = "2026-10-30T16:00:00Z"
        hz(tmp_path, "heinzel", "wake", "shipped", "--message", "later", now=later)
        assert fake.statuses() == [304]

        doctor = hz(tmp_path, "system", "doctor", "--json")
        checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
        assert checks["adapter code-host"]["adapter"] == "github"
        assert checks["adapter code-host"]["configured"] is True
        assert checks["adapter calendar"]["configured"] is False
        assert "GH_TOKEN" in checks["adapter code-host"]["detail"]
        leaked = [
            p
            for p in (tmp_path / "home").rglob("*")
            if p.is_file() and TOKEN in p.read_text("utf-8", "replace")
        ]
        assert leaked == []

    def test_a_bad_adapter_table_is_a_coded_error(self, tmp_path: Path) -> None:
        """A backend the capability can't use is HZH015 naming the table, exit 1."""
        (tmp_path / "config.toml").write_text('[adapters.calendar]\nbackend = "github"\n')
        result = hz(tmp_path, "system", "doctor")
        assert result.returncode == 1
        assert result.stderr.startswith("HZH015: [adapters.calendar]")
