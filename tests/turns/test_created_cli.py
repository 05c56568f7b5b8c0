"""`hz heinzel new "a sentence"` on the offline rules, through the `hz` executable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests import forkhz

SENTENCE = "summarise notes.md into today.md"
Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def hz(tmp_path: Path) -> Run:
    """``hz`` run in a work folder holding notes.md, on the offline model."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.md").write_text("- ship the rounding fix\n", encoding="utf-8")
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "HZ_HOME": str(tmp_path / "home"),
        "HZ_CONFIG": "",
        "HZ_NOW": "2026-10-30T14:00:00.000Z",
        "HZ_USER": "me",
    }

    def run(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return forkhz.run(
            [sys.executable, "-m", "heinzel", *args],
            cwd=work,
            env={**env, **extra},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    return run


def _sessions(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "home" / "heinzel").glob("hz-*"))


class TestCreatedOffline:
    """The offline rules read the files a sentence names and write where it says."""

    def test_a_named_source_is_read_and_the_target_written(self, hz: Run, tmp_path: Path) -> None:
        """notes.md becomes a files.read input, today.md the output; a wake drafts into
        today.md and leaves notes.md as it was."""
        made = hz("heinzel", "new", SENTENCE)
        assert made.returncode == 0, made.stderr
        [session] = _sessions(tmp_path)
        text = (session / "contract" / "v1.prose.md").read_text(encoding="utf-8")
        assert "{from: files.read, args: {path: notes.md}}" in text
        assert 'asset: "file:today.md"' in text and "file:notes.md" not in text
        assert hz("approve", "today").returncode == 0
        work = tmp_path / "work"
        (work / "today.md").write_text("# Today\n", encoding="utf-8")
        woke = hz("heinzel", "wake", "today", "--json")
        assert woke.returncode == 0, woke.stderr
        assert json.loads(woke.stdout)["disposition"] == "drafted", woke.stdout
        assert (work / "notes.md").read_text(encoding="utf-8") == "- ship the rounding fix\n"
        assert "hz:draft key=" in (work / "today.md").read_text(encoding="utf-8")

    def test_a_taken_name_is_refused_and_leaves_nothing(self, hz: Run, tmp_path: Path) -> None:
        """The same sentence twice: HZH292, exit 1, no `new-...` row."""
        assert hz("heinzel", "new", SENTENCE).returncode == 0
        again = hz("heinzel", "new", SENTENCE)
        assert again.returncode == 1 and "HZH292" in again.stderr, again.stderr
        assert len(_sessions(tmp_path)) == 1
        names = [r["name"] for r in json.loads(hz("heinzel", "list", "--json").stdout)]
        assert names == ["today"]

    def test_a_taken_name_given_is_refused_before_the_model_runs(
        self, hz: Run, tmp_path: Path
    ) -> None:
        """`--name` with a sentence names the new one whatever its contract says; a taken
        `--name` is HZH292 at once: no created turn, no session folder, no spend."""
        made = hz("heinzel", "new", SENTENCE, "--name", "notes-digest")
        assert made.returncode == 0, made.stderr
        names = [r["name"] for r in json.loads(hz("heinzel", "list", "--json").stdout)]
        assert names == ["notes-digest"]
        # an unreachable provider proves no model runs: the offline rules are not asked
        again = hz(
            "heinzel", "new", "anything at all", "--name", "notes-digest", HZ_MODEL="openai:gpt-x"
        )
        assert again.returncode == 1 and "HZH292" in again.stderr, again.stderr
        assert "--name NEW" in again.stderr
        assert len(_sessions(tmp_path)) == 1

    @pytest.mark.kill
    def test_a_creation_killed_midway_is_not_approvable(self, hz: Run, tmp_path: Path) -> None:
        """Killed after turn.started, the provisional one refuses `hz approve` with HZH294
        (no traceback) and can be retired."""
        killed = hz("heinzel", "new", SENTENCE, HZ_CRASH_AT="after:turn.started")
        assert killed.returncode == 137
        [row] = json.loads(hz("heinzel", "list", "--json").stdout)
        approved = hz("approve", row["name"])
        assert approved.returncode == 1 and "HZH294" in approved.stderr, approved.stderr
        assert "Traceback" not in approved.stderr
        assert hz("heinzel", "retire", row["name"]).returncode == 0
