"""``hz team`` as a person runs it when the repository is wrong: the coded error says git's
reason, not the advice git prints after it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_a_repository_that_is_not_one_names_gits_reason(tmp_path: Path) -> None:
    """`[team] repository` naming a folder that holds no repository: `hz team lint` exits 1
    with HZH301 and git's own reason ("does not appear to be a git repository")."""
    config = tmp_path / "config.toml"
    config.write_text(
        f'[team]\nrepository = "{tmp_path / "missing.git"}"\nhandle = "ana"\n', encoding="utf-8"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HZ_")}
    env.update(HZ_HOME=str(tmp_path / "home"), HZ_CONFIG=str(config))
    done = subprocess.run(
        [sys.executable, "-m", "heinzel", "team", "lint"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    first, hint = done.stderr.splitlines()
    assert first.startswith("HZH301: the team repository: git fetch failed (fatal: ")
    assert "does not appear to be a git repository" in first
    assert hint.startswith("hint: ")
