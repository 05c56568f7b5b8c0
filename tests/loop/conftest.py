"""A scratch folder a person works in, and `hz` run as a process in it (issue 13's loop)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from heinzel.cli import group
from tests import forkhz
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


EXECD = {"test_exits.py", "test_hints.py", "test_home_walk.py"}
"""The files whose runs are the real `hz` executable: what a command exits with, what
its hints send the user to and what it does to the home (the others fork theirs from
tests/forkhz.py; the README walk, the interrupt and the busy tick start their own
processes)."""


class Runner:
    """`hz ARGS` in the folder, each run one minute after the last (HZ_NOW): as a process
    (calling it), or in this process through the click group (`in_process`, for set-up
    that is not what a test proves)."""

    def __init__(self, hz_env: dict[str, str], folder: Path, *, execd: bool = True) -> None:
        self.hz_env = hz_env
        self.folder = folder
        self.minute = 0
        self.execd = execd

    def _environ(self, env: dict[str, str] | None) -> dict[str, str]:
        self.minute += 1
        return {**self.hz_env, "HZ_NOW": f"2026-10-30T14:{self.minute:02d}:00Z", **(env or {})}

    def __call__(self, *args: str, env: dict[str, str] | None = None) -> Done:
        done = (subprocess.run if self.execd else forkhz.run)(
            [sys.executable, "-m", "heinzel", *args],
            cwd=self.folder,
            capture_output=True,
            text=True,
            check=False,
            env=self._environ(env),
        )
        return Done(done.returncode, done.stdout, done.stderr)

    def in_process(self, *args: str) -> Done:
        """The same command with the same environment (nothing else of this process's:
        ``None`` unsets a variable for `CliRunner`), run by `heinzel.cli.group`."""
        environ = self._environ(None)
        unset: dict[str, str | None] = {k: None for k in os.environ if k not in environ}
        cwd = Path.cwd()
        os.chdir(self.folder)
        try:
            result = CliRunner().invoke(
                group(), list(args), env={**unset, **environ}, catch_exceptions=False
            )
        finally:
            os.chdir(cwd)
        return Done(result.exit_code, result.stdout, result.stderr)


@pytest.fixture
def hz(request: pytest.FixtureRequest, hz_env: dict[str, str], folder: Path) -> Runner:
    """Run `hz ARGS` in the folder as a process; each run one minute after the last."""
    return Runner(hz_env, folder, execd=request.path.name in EXECD)


@pytest.fixture
def approved(hz: Runner) -> Runner:
    """notes-digest created and approved, at the first two minutes. Set-up only, so in this
    process: the tests that prove `hz heinzel new` and `hz approve` run them as processes."""
    assert hz.in_process("heinzel", "new", "--from", "digest.prose.md").code == 0
    assert hz.in_process("approve", "notes-digest").code == 0
    return hz
