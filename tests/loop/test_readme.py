"""The README's first Heinzelmännchen, run as written in a fresh copy of the worked example."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def walkthrough() -> list[list[str]]:
    """The `hz ...` lines of the README's first sh block after "Your first Heinzelmännchen"."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Your first Heinzelmännchen", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block is not None
    lines = [line.split("  #", 1)[0].strip() for line in block.group(1).splitlines()]
    return [shlex.split(line)[1:] for line in lines if line.startswith("hz ")]


def test_the_readme_walkthrough_runs_and_leaves_the_document_clean(tmp_path: Path) -> None:
    """Every `hz` line of the README exits 0 in a fresh copy, and the approved draft is left
    without hz's markers."""
    folder = tmp_path / "priya"
    shutil.copytree(ROOT / "fixtures" / "priya", folder)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HZ_HOME": str(folder / "home"),
        "HZ_FIXTURE_SOURCES": str(folder),
        "HZ_NOW": "2026-10-30T14:05:00Z",
        "HZ_CONFIG": "",
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
    }
    commands = walkthrough()
    assert len(commands) >= 6
    for args in commands:
        done = subprocess.run(
            [sys.executable, "-m", "heinzel", *args],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, (args, done.stdout, done.stderr)
    text = (folder / "weekly-report.md").read_text(encoding="utf-8")
    assert "<!-- hz:" not in text and "🧝 DRAFT" not in text
