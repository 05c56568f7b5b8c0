"""An idle tick imports only what its due queries need (issue 42, item 1): a real
`hz system daemon tick` process over a home where nothing is due, its modules read at
exit (exec'd, not forked from the tests' fork server, which has everything loaded)."""

from __future__ import annotations

from pathlib import Path

from tests.heinzel.test_cli_surface import _loaded

IDLE_ABSENT = (
    "pydantic",
    "pydantic_core",
    "sqlite_utils",
    "pydantic_ai",
    "heinzel.engine",
    "heinzel.contract.model",
    "heinzel.contract.schedule",
    "croniter",
    "heinzel.turns.inputs",
    "heinzel.capabilities.configured",
    "machines.core.runner",
    "heinzel.turns.failure",
)
"""What a tick with nothing due never loads: no pydantic (the settings are dataclasses,
the index a sqlite3 connection), no sqlite-utils, no pydantic-ai, no contract models, no
adapters (providers), no croniter, no turn runner."""

IDLE_MODULES = 280
"""At most this many modules in all (259 when set; 390 while the settings were pydantic
models and the index was opened through sqlite-utils; `python -c pass` loads about 40)."""


def test_an_idle_tick_loads_no_contract_models_adapters_or_runner(tmp_path: Path) -> None:
    loaded = _loaded(["system", "daemon", "tick"], str(tmp_path / "home"))
    assert "heinzel.tick.tick" in loaded  # it did tick
    found = sorted(m for m in loaded if any(m == a or m.startswith(a + ".") for a in IDLE_ABSENT))
    assert found == []
    assert len(loaded) <= IDLE_MODULES, len(loaded)


CONTRACT = """---
name: notes
kind: responsibility
hz:
  schedule: "0 15 * * *"
  timezone: Europe/Berlin
  requires: [files:read]
  inputs:
    notes: {from: files.read, args: {path: notes.txt}, recheck: 10m}
---

### Goal

Keep the notes summarised.

### Done when

- [ ] the summary is current
"""


def test_a_nothing_moved_tick_loads_no_pydantic(tmp_path: Path) -> None:
    """A tick whose one due thing is a file's recheck, the file unchanged (no wake), builds
    the built-in adapters without the adapter tables' models and never loads pydantic,
    sqlite-utils or the contract models (issue 42: a nothing-moved tick at most 8x)."""
    import json
    import subprocess
    import sys

    from tests.heinzel.test_cli_surface import _LOADED

    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "notes.txt").write_text("v0\n", encoding="utf-8")
    (folder / "notes.prose.md").write_text(CONTRACT, encoding="utf-8")
    home = tmp_path / "home"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "HZ_HOME": str(home)}
    hz = str(Path(sys.executable).with_name("hz"))

    def run(now: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            args, cwd=folder, env={**env, "HZ_NOW": now}, capture_output=True, text=True
        )

    first = "2026-10-30T09:00:00Z"
    for args in (
        ["heinzel", "new", "--from", "notes.prose.md", "--name", "notes"],
        ["approve", "notes"],
    ):
        assert run(first, hz, *args).returncode == 0
    polled = run(first, hz, "system", "daemon", "tick", "--json")  # the file's first poll
    assert polled.returncode == 0, polled.stderr
    done = run(
        "2026-10-30T09:20:00Z", sys.executable, "-c", _LOADED, "system", "daemon", "tick", "--json"
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["fetches"], report["woken"], report["errors"]) == (1, [], [])
    line = next(x for x in done.stderr.splitlines() if x.startswith("LOADED "))
    loaded = set(line.split()[1:])
    absent = (
        "pydantic",
        "sqlite_utils",
        "heinzel.contract.model",
        "heinzel.capabilities.configured",
    )
    assert sorted(m for m in loaded if any(m == a or m.startswith(a + ".") for a in absent)) == []
