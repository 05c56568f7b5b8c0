"""What a drafted offline `hz heinzel wake` imports: no provider's client.

The real `hz` runs the wake in a process of its own with ``-X importtime``; every module
it imported is named on its stderr."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.tick.homes import env, make_home

IMPORTED = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", re.MULTILINE)
CLIENTS = ("openai", "anthropic", "pydantic_ai.models.openai", "pydantic_ai.models.anthropic")


def test_an_offline_wake_imports_no_providers_client(tmp_path: Path) -> None:
    """The offline model drafts with neither vendor SDK nor pydantic-ai's models for them
    loaded (they load when a turn's model names the provider)."""
    root, _ = make_home(tmp_path, 1)
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "heinzel", "heinzel", "wake", "report-0"],
        cwd=root,
        env=env(root),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-800:]
    assert "drafted" in done.stdout
    imported = set(IMPORTED.findall(done.stderr))
    assert "heinzel.engine.offline" in imported  # the listing is the wake's own
    assert sorted(imported & set(CLIENTS)) == []
