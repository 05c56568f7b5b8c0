"""`hz system credential list` names the secret each source adapter really uses, the same
answer as `hz system doctor`: a table's ``token_env`` / ``password_env`` and
``HZ_CALDAV_PASSWORD`` win over the stored credential, and the adapters read them so
(the loopback GitHub sees the token, a real Radicale accepts the password)."""

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
from tests.adapters.test_calendars import radicale  # noqa: F401
from tests.adapters.test_github_cli import CONTRACT

HZ = Path(sys.executable).with_name("hz")


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
        "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
        "HZ_TESTING": "1",
        "MY_TOKEN": "ghp_fromMyToken",
        "HZ_CALDAV_PASSWORD": "s3cret",
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


def test_list_and_doctor_name_the_variable_the_adapters_use(
    fake: FakeGitHub,
    radicale: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    """``token_env = "MY_TOKEN"`` set and a stored github token: the token sent is
    MY_TOKEN's, and list and doctor say so (the stored one overridden). No
    ``password_env``, ``HZ_CALDAV_PASSWORD`` set and a wrong stored caldav password: the
    adapter logs in with the variable, and list and doctor say so."""
    import caldav

    caldav.DAVClient(url=radicale, username="priya", password="s3cret").principal().make_calendar(
        name="work"
    )
    (tmp_path / "config.toml").write_text(
        f'[adapters.code-host]\nbackend = "github"\nbase_url = "{fake.url}"\n'
        'token_env = "MY_TOKEN"\n'
        f'[adapters.calendar]\nbackend = "caldav"\nurl = "{radicale}"\nusername = "priya"\n'
    )
    assert (
        hz(tmp_path, "system", "credential", "set", "github", stdin="ghp_stored\n").returncode == 0
    )
    assert hz(tmp_path, "system", "credential", "set", "caldav", stdin="wrong\n").returncode == 0

    listed = hz(tmp_path, "system", "credential", "list", "--json")
    rows = {r["provider"]: r for r in json.loads(listed.stdout)}
    assert rows["github"]["adapters"] == {"code-host": "env:MY_TOKEN"}
    assert rows["caldav"]["adapters"] == {"calendar": "env:HZ_CALDAV_PASSWORD"}
    text = hz(tmp_path, "system", "credential", "list").stdout
    assert "github: $MY_TOKEN (used by code-host), stored (overridden); reads $MY_TOKEN" in text
    assert "caldav: $HZ_CALDAV_PASSWORD (used by calendar), stored (overridden)" in text

    doctor = json.loads(hz(tmp_path, "system", "doctor", "--online", "--json").stdout)
    checks = {c["name"]: c for c in doctor["checks"]}
    assert checks["adapter code-host"]["detail"].endswith("token from MY_TOKEN")
    assert checks["adapter calendar"]["detail"].endswith("password from HZ_CALDAV_PASSWORD")
    assert checks["adapter calendar online"]["ok"] is True, checks["adapter calendar online"]

    (tmp_path / "report.md").write_text("# Report\n")
    (tmp_path / "shipped.prose.md").write_text(CONTRACT)
    assert hz(tmp_path, "heinzel", "new", "--from", "shipped.prose.md").returncode == 0
    assert hz(tmp_path, "approve", "shipped").returncode == 0
    assert hz(tmp_path, "heinzel", "wake", "shipped").returncode == 0
    assert {s.authorization for s in fake.seen} == {"token ghp_fromMyToken"}
