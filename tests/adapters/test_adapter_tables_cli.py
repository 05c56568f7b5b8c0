"""`[adapters.*]` tables written with a newcomer's mistakes, through `hz system doctor`:
each HZH015 names the key in the table's own words and its hint is the fix; a secret
written into the file is sent to token_env or the credential store; and `--online`
against a GitHub that has no API at base_url says to check base_url."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import forkhz
from tests.adapters.github_server import FakeGitHub


def _doctor(tmp_path: Path, config: str, *flags: str) -> tuple[int, str, str]:
    (tmp_path / "config.toml").write_text(config, encoding="utf-8")
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "HZ_HOME": str(tmp_path / "home"),
        "HZ_CONFIG": str(tmp_path / "config.toml"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
    }
    done = forkhz.hz(["system", "doctor", *flags], env, tmp_path)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize(
    ("table", "message", "hint"),
    [
        (
            '[adapters.code-host]\nbackend = "gihub"\n',
            "backend is 'gihub'",
            "did you mean 'github'? code-host's backend is one of: github, fixture",
        ),
        (
            '[adapters.code-host]\nbackend = "github"\ntoken = "ghp_x"\n',
            "token would keep a secret in the configuration",
            'name the variable that holds it instead, token_env = "MY_GITHUB_TOKEN", or store '
            "it with `hz system credential set github`",
        ),
        (
            '[adapters.calendar]\nbackend = "caldav"\nurl = "https://dav.example.com/"\n'
            'password = "s3cret"\n',
            "password would keep a secret in the configuration",
            'name the variable that holds it instead, password_env = "HZ_CALDAV_PASSWORD", '
            "or store it with `hz system credential set caldav`",
        ),
        (
            '[adapters.calendar]\nbackend = "caldav"\nusername = "priya"\n',
            "missing key url",
            "add url; backend caldav takes: attendee, calendar, password_env, url, username "
            "(docs/adapters.md)",
        ),
        (
            '[adapters.calendar]\nbackend = "caldav"\nurl = "https://dav.example.com/"\n'
            'calender = "Work"\n',
            "unknown key calender",
            "did you mean 'calendar'? backend caldav takes: attendee, calendar, password_env, "
            "url, username (docs/adapters.md)",
        ),
    ],
)
def test_a_mistaken_table_is_hzh015_with_the_fix(
    tmp_path: Path, table: str, message: str, hint: str
) -> None:
    """Exit 1; the message names the key as written; the hint says what to write."""
    status, _out, err = _doctor(tmp_path, table)
    capability = table.split("]", 1)[0].removeprefix("[adapters.")
    where = f"[adapters.{capability}] (from {tmp_path / 'config.toml'})"
    assert status == 1
    assert err.splitlines() == [f"HZH015: {where}: {message}", f"hint: {hint}"]
    assert "s3cret" not in err and "ghp_x" not in err


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    server = FakeGitHub().start()  # no /rate_limit: not GitHub's API root
    yield server
    server.stop()


def test_online_at_a_url_that_is_no_api_root_says_to_check_base_url(
    github: FakeGitHub, tmp_path: Path
) -> None:
    """A 404 for GET /rate_limit asked for no repository: the fix is base_url, not repo:."""
    table = f'[adapters.code-host]\nbackend = "github"\nbase_url = "{github.url}"\n'
    status, out, _err = _doctor(tmp_path, table, "--online")
    line = next(text for text in out.splitlines() if "code-host online" in text)
    fix = out.splitlines()[out.splitlines().index(line) + 1]
    assert status == 1 and "404" in line
    assert fix.strip().startswith("fix: HZH163: check base_url: GitHub's API root")
