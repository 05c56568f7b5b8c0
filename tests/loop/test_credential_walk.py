"""`hz system credential list`, run as a user runs it: every variable a secret is read from."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def _list(tmp_path: Path, *args: str, **variables: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HZ_CONFIG": "",
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
        **variables,
    }
    return subprocess.run(
        [sys.executable, "-m", "heinzel", "system", "credential", "list", *args],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )


class TestEveryVariableIsListed:
    """The GitHub token is read from ``GH_TOKEN`` and ``GITHUB_TOKEN``: both are listed."""

    def test_github_lists_both_variables(self, tmp_path: Path) -> None:
        """With neither set, the github line names both variables it reads."""
        done = _list(tmp_path)
        assert done.returncode == 0, done.stderr
        assert "github: no key; reads $GH_TOKEN, $GITHUB_TOKEN" in done.stdout.splitlines()

    def test_github_token_alone_is_the_key_used(self, tmp_path: Path) -> None:
        """``GITHUB_TOKEN`` set alone is the key used, not "no key"; `--json` names it and
        every variable, and no key is shown."""
        done = _list(tmp_path, GITHUB_TOKEN="ghp-secret")
        assert "github: $GITHUB_TOKEN (used); reads $GH_TOKEN, $GITHUB_TOKEN" in done.stdout
        rows = {
            r["provider"]: r
            for r in json.loads(_list(tmp_path, "--json", GITHUB_TOKEN="ghp-secret").stdout)
        }
        github = rows["github"]
        assert (github["variable"], github["variable_set"]) == ("GITHUB_TOKEN", True)
        assert github["variables"] == ["GH_TOKEN", "GITHUB_TOKEN"]
        assert "ghp-secret" not in done.stdout
