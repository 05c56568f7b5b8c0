"""A scratch folder a person works in, and `hz` run as a process in it (issue 13's loop)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.turns.conftest import CONTRACT


@dataclass
class Done:
    """One `hz` run: exit status and both streams."""

    code: int
    out: str
    err: str


Hz = Callable[..., Done]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """notes.txt, report.md and digest.prose.md (reads notes, drafts into report.md)."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("ship the rounding fix\n", encoding="utf-8")
    (work / "report.md").write_text("# Report\n", encoding="utf-8")
    text = CONTRACT.format(render="always", done_when="every item of `notes` is covered")
    (work / "digest.prose.md").write_text(text, encoding="utf-8")
    return work


@pytest.fixture
def hz_env(tmp_path: Path) -> dict[str, str]:
    """The environment every `hz` run here gets (its own home, no user configuration)."""
    return {
        "PATH": os.environ.get("PATH", ""),
        "HZ_HOME": str(tmp_path / "home"),
        "HZ_CONFIG": "",
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
    }


@pytest.fixture
def hz(hz_env: dict[str, str], folder: Path) -> Hz:
    """Run `hz ARGS` in the folder; each run one minute after the last (HZ_NOW)."""
    minute = [0]

    def run(*args: str, env: dict[str, str] | None = None) -> Done:
        minute[0] += 1
        environ = {
            **hz_env,
            "HZ_NOW": f"2026-10-30T14:{minute[0]:02d}:00Z",
            **(env or {}),
        }
        done = subprocess.run(
            [sys.executable, "-m", "heinzel", *args],
            cwd=folder,
            capture_output=True,
            text=True,
            check=False,
            env=environ,
        )
        return Done(done.returncode, done.stdout, done.stderr)

    return run


@pytest.fixture
def approved(hz: Hz) -> Hz:
    """notes-digest created and approved."""
    assert hz("heinzel", "new", "--from", "digest.prose.md").code == 0
    assert hz("approve", "notes-digest").code == 0
    return hz
