"""``hz heinzel retry`` as a person runs it: it says how the fork ended, and a fork that
failed exits 1 with its cause, as ``hz heinzel wake`` does."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "priya"


def test_a_retry_whose_fork_fails_exits_1_with_the_cause(tmp_path: Path) -> None:
    """The README's draft, then its document replaced by a folder: the retry's fork fails
    placing the draft, and `hz heinzel retry` prints `state: failed` and exits 1 with the
    coded cause on stderr; with the document back, a retry prints `disposition: drafted`."""
    documents = shutil.copytree(FIXTURES, tmp_path / "priya")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HZ_")}
    env.update(
        HZ_HOME=str(tmp_path / "home"),
        HZ_FIXTURE_SOURCES=str(documents),
        HZ_NOW="2026-10-30T14:05:00Z",
        HZ_MODEL="offline",
        HZ_LOG_LEVEL="error",
        XDG_CONFIG_HOME=str(tmp_path / "config"),
    )

    def hz(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "heinzel", *args],
            env=env,
            cwd=documents,
            capture_output=True,
            text=True,
            timeout=120,
        )

    assert hz("heinzel", "new", "--from", "weekly-report.prose.md").returncode == 0
    assert hz("approve", "weekly-report").returncode == 0
    assert hz("heinzel", "wake", "weekly-report").returncode == 0
    document = documents / "weekly-report.md"
    kept = document.read_bytes()
    document.unlink()
    document.mkdir()

    failed = hz("heinzel", "retry", "weekly-report", "shorter")
    assert failed.returncode == 1
    assert "state: failed" in failed.stdout
    assert failed.stderr.startswith("HZL003: ")
    assert "\nhint: " in failed.stderr

    document.rmdir()
    document.write_bytes(kept)
    again = hz("heinzel", "retry", "weekly-report", "shorter")
    assert again.returncode == 0, again.stderr
    assert "disposition: drafted" in again.stdout
