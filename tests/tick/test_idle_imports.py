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
    "machines.runner",
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
