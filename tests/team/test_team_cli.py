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


def test_an_asked_turn_runs_only_where_the_lease_is(tmp_path: Path) -> None:
    """`hz heinzel wake` of a team Heinzelmännchen on Ben's machine while Ana's holds the
    lease is refused (HZH304, naming the holder) and starts no turn; on Ana's it runs."""
    from datetime import timedelta

    from .test_two_machines import START, team_of_two

    _, ana, ben = team_of_two(tmp_path)
    now = START + timedelta(hours=12)
    ana.hz(now, "system", "daemon", "tick")
    ben.hz(now, "system", "daemon", "tick")
    refused = ben.hz(now, "heinzel", "wake", "daily-digest", check=False)
    assert refused.returncode == 1
    assert refused.stderr.startswith("HZH304: ") and "ana" in refused.stderr
    spines = list((ben.root / "home" / "heinzel").glob("*/session.jsonl"))
    assert not any('"turn.started"' in s.read_text(encoding="utf-8") for s in spines)
    asked = ana.hz(now, "heinzel", "wake", "daily-digest", check=False)
    assert "HZH304" not in asked.stderr
