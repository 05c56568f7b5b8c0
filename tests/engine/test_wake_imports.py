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


NOT_NEEDED = (
    "structlog",
    "heinzel.team",
    "heinzel.engine.offline_amend",
    "heinzel.engine.offline_create",
    "heinzel.engine.offline_discover",
    "heinzel.engine.chat",
    "heinzel.capabilities.configured",
    "genai_prices.data",
    "croniter",
)
"""What a scheduled or asked wake in a home without ``[team]``, at the default log level
(warning), never loads: the logging library (no line reaches the level), the team's
modules, the offline model's rules for created, amending and discovery turns, a chat
turn's proposals and answers (loaded when a run pauses on a proposal), the adapter
tables' models (pydantic; loaded when an ``[adapters.*]`` table is configured), and
genai-prices' price table (the free offline model looks no price up; a paid model's
first price loads it), and croniter (the approved contract's stored form is believed by
its fingerprint, so its schedule is not checked again; a tick loads croniter for a due
slot)."""


def _wake_imports(root: Path, **extra: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "heinzel", "heinzel", "wake", "report-0"],
        cwd=root,
        env=env(root, **extra),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-800:]
    assert "drafted" in done.stdout
    return done, set(IMPORTED.findall(done.stderr))


def test_a_wake_loads_only_what_it_uses(tmp_path: Path) -> None:
    """Start-up by need: structlog loads with the first line at the log level, the team's
    modules only in a home that takes part in a team, the offline model's other rules
    with the turns that use them."""
    root, _ = make_home(tmp_path, 1)
    _, imported = _wake_imports(root)
    assert "heinzel.engine.offline" in imported
    assert sorted(imported & set(NOT_NEEDED)) == []


def test_a_wake_at_level_info_logs_its_events(tmp_path: Path) -> None:
    """At ``HZ_LOG_LEVEL=info`` the same wake logs each appended event (kind and seq,
    never content) on stderr: the level, not the start-up, decides what is written."""
    root, _ = make_home(tmp_path, 1)
    done, imported = _wake_imports(root, HZ_LOG_LEVEL="info")
    assert "structlog" in imported
    assert "appended" in done.stderr and "kind=turn.started" in done.stderr


MODELS = (
    "heinzel.config",
    "heinzel.contract.model",
    "heinzel.contract.body",
    "heinzel.contract.skills",
    "heinzel.contract.compiler",
    "heinzel.engine.outcome",
    "heinzel.capabilities.configured",
)
_BUILT = """
import sys, importlib
from pydantic import BaseModel
built = []
for name in sys.argv[1:]:
    for value in vars(importlib.import_module(name)).values():
        if isinstance(value, type) and issubclass(value, BaseModel) and value.__module__ == name:
            if value.__pydantic_complete__:
                built.append(f"{name}.{value.__qualname__}")
print(" ".join(built))
"""


def test_settings_contract_and_outcome_models_build_when_first_validated() -> None:
    """Importing the modules a wake needs builds none of their pydantic models: each is
    built when something first validates it (a wake validates 6 of the 36, and their
    nested models inside them), so a wake never pays for the rest."""
    done = subprocess.run(
        [sys.executable, "-c", _BUILT, *MODELS], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == []
