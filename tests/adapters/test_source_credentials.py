"""The GitHub token and the CalDAV password from hz's credential store
(``hz system credential set github|caldav``): used by the adapters, shown by doctor as
stored, never written into the home."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest

from heinzel.capabilities.configured import build_adapters
from heinzel.capabilities.errors import CapabilityError
from heinzel.capabilities.protocols import ReadCapability
from tests import forkhz
from tests.adapters.github_server import FakeGitHub, pull
from tests.adapters.test_calendars import ICS, NOW, WEEK, per_uid, radicale  # noqa: F401
from tests.adapters.test_github_cli import CONTRACT

HZ = Path(sys.executable).with_name("hz")
TOKEN = "ghp_storedNotInEnv987"


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    server = FakeGitHub(
        routes={"/repos/octo/app/pulls": [pull(42, "2026-10-29T10:00:00Z", "2026-10-29T10:00:00Z")]}
    ).start()
    yield server
    server.stop()


def hz(tmp_path: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "HZ_HOME": str(tmp_path / "home"),
        "HZ_NOW": "2026-10-30T14:00:00Z",
        "HZ_CONFIG": str(tmp_path / "config.toml"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "HZ_MODEL": "offline",
    }
    return forkhz.run(
        [str(HZ), *args],
        env=env,
        cwd=tmp_path,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_stored_github_token_reaches_github_and_no_file_of_the_home(
    fake: FakeGitHub, tmp_path: Path
) -> None:
    """With no GH_TOKEN, `hz system credential set github` is the token the wake sends;
    doctor and credential list say it is stored; the home holds it nowhere."""
    (tmp_path / "config.toml").write_text(
        f'[adapters.code-host]\nbackend = "github"\nbase_url = "{fake.url}"\n'
    )
    (tmp_path / "report.md").write_text("# Report\n")
    (tmp_path / "shipped.prose.md").write_text(CONTRACT)
    stored = hz(tmp_path, "system", "credential", "set", "github", stdin=TOKEN + "\n")
    assert stored.returncode == 0, stored.stderr
    assert TOKEN not in stored.stdout + stored.stderr
    assert hz(tmp_path, "heinzel", "new", "--from", "shipped.prose.md").returncode == 0
    assert hz(tmp_path, "approve", "shipped").returncode == 0
    woken = hz(tmp_path, "heinzel", "wake", "shipped", "--json")
    assert woken.returncode == 0, woken.stderr
    assert {s.authorization for s in fake.seen} == {f"token {TOKEN}"}

    listed = json.loads(hz(tmp_path, "system", "credential", "list", "--json").stdout)
    assert {r["provider"]: r["stored"] for r in listed}["github"] is True
    doctor = json.loads(hz(tmp_path, "system", "doctor", "--json").stdout)
    checks = {c["name"]: c for c in doctor["checks"]}
    assert "credential store" in checks["adapter code-host"]["detail"]
    assert TOKEN not in json.dumps(doctor)
    leaked = [
        p
        for p in (tmp_path / "home").rglob("*")
        if p.is_file() and TOKEN in p.read_text("utf-8", "replace")
    ]
    assert leaked == []


def test_a_stored_caldav_password_opens_a_real_radicale(radicale: str) -> None:  # noqa: F811
    """A caldav table without password_env reads the `caldav` credential; without one the
    server refuses (HZH172): the stored password is what got in."""
    import caldav

    caldav.DAVClient(url=radicale, username="priya", password="s3cret").principal().make_calendar(
        name="work"
    ).save_event(per_uid(ICS)[0])
    table = {"calendar": {"backend": "caldav", "url": radicale, "username": "priya"}}

    def adapter(secret: str | None) -> ReadCapability:
        built = build_adapters(
            table,
            approver="priya",
            http_cache=None,
            environ={},
            stored=lambda provider: secret if provider == "caldav" else None,
        )
        return cast(ReadCapability, built["calendar"])

    got = adapter("s3cret").fetch("events", {}, WEEK, now=NOW)
    assert [r["title"] for r in got.result][:1] == ["Standup"]
    with pytest.raises(CapabilityError) as refused:
        adapter(None).fetch("events", {}, WEEK, now=NOW)
    assert refused.value.code == "HZH172"


def test_doctor_online_makes_one_request_per_source_adapter_and_names_failures(
    fake: FakeGitHub,
    radicale: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    """`hz system doctor --online`: one GET /rate_limit for code-host and tracker together,
    the CalDAV principal with a wrong stored password is HZH172, a GitHub 500 is HZH161."""
    (tmp_path / "config.toml").write_text(
        f'[adapters.code-host]\nbackend = "github"\nbase_url = "{fake.url}"\n'
        f'[adapters.tracker]\nbackend = "github"\nbase_url = "{fake.url}"\n'
        f'[adapters.calendar]\nbackend = "caldav"\nurl = "{radicale}"\nusername = "priya"\n'
    )
    fake.routes["/rate_limit"] = []
    hz(tmp_path, "system", "credential", "set", "caldav", stdin="not-the-password")
    offline = hz(tmp_path, "system", "doctor", "--json")
    assert fake.seen == []  # without --online nothing leaves the machine

    doctor = hz(tmp_path, "system", "doctor", "--online", "--json")
    assert doctor.returncode == 1
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert [s.path for s in fake.seen] == ["/rate_limit"]
    assert checks["adapter code-host online"]["ok"] is True
    assert "4999 requests left" in checks["adapter tracker online"]["detail"]
    assert checks["adapter calendar online"]["code"] == "HZH172"
    assert "not-the-password" not in doctor.stdout + offline.stdout

    fake.fail["/rate_limit"] = 500
    text = hz(tmp_path, "system", "doctor", "--online")
    assert text.returncode == 1
    assert "HZH161" in text.stdout
