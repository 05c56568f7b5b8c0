"""What a drafted offline `hz heinzel wake` imports: no provider's client.

The real `hz` runs the wake in a process of its own with ``-X importtime``; every module
it imported is named on its stderr."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from heinzel.cli import MODULES
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
    *(f"heinzel.cli.{name}" for name in MODULES if name != "commands"),
)
"""What a scheduled or asked wake in a home without ``[team]``, at the default log level
(warning), never loads: the logging library (no line reaches the level), the team's
modules, the offline model's rules for created, amending and discovery turns, a chat
turn's proposals and answers (loaded when a run pauses on a proposal), the adapter
tables' models (pydantic; loaded when an ``[adapters.*]`` table is configured), and
genai-prices' price table (the free offline model looks no price up; a paid model's
first price loads it), and croniter (the approved contract's stored form is believed by
its fingerprint, so its schedule is not checked again; a tick loads croniter for a due
slot), and the other commands' modules (`heinzel.cli.OWNERS`)."""


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


NOT_COMPILED = (
    "heinzel.capabilities.git:_github_re",
    "heinzel.capabilities.git:_gitlab_re",
    "heinzel.capabilities.git:_email_re",
    "heinzel.contract.body:_heading_re",
    "heinzel.contract.body:_fence_re",
    "heinzel.contract.body:_item_re",
    "heinzel.contract.body:_check_re",
    "heinzel.contract.body:_bullet_re",
    "heinzel.contract.openprose:_legacy_re",
    "heinzel.contract.openprose:_node_re",
    "heinzel.contract.openprose:_section_re",
    "heinzel.contract.openprose:_fence_re",
    "heinzel.index.notices:_needed_re",
    "heinzel.store.inbox:_name_re",
    "heinzel.store.inbox:_id_re",
    "heinzel.store.sources:_entry_re",
    "heinzel.store.sources:_kept_re",
    "heinzel.store.sources:_leftover_re",
    "ledger.bodies:_body_file_re",
    "ledger.redact:patterns",
    "ledger.spine:_side_file_re",
    "machines.stores.spine_journal:_plain_tail_re",
)
"""The regular expressions of modules a wake imports that the wake never matches with:
each is compiled on its first use (a `functools.cache`'d getter), not at import (about
0.5 M instructions each)."""
_COMPILED = """
import atexit, importlib, runpy, sys
names = sys.argv[1:]
def report():
    for name in names:
        module, _, getter = name.partition(":")
        compiled = getattr(importlib.import_module(module), getter).cache_info().currsize
        print("compiled:" if compiled else "not compiled:", name)
atexit.register(report)
sys.argv = ["hz", "heinzel", "wake", "report-0"]
runpy.run_module("heinzel", run_name="__main__")
"""


def test_a_wake_compiles_no_pattern_it_does_not_match_with(tmp_path: Path) -> None:
    """The real drafted wake: none of `NOT_COMPILED` was compiled by its end."""
    root, _ = make_home(tmp_path, 1)
    done = subprocess.run(
        [sys.executable, "-c", _COMPILED, *NOT_COMPILED],
        cwd=root,
        env=env(root),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-800:]
    assert "drafted" in done.stdout
    said = [line for line in done.stdout.splitlines() if "compiled: " in line]
    assert said == [f"not compiled: {name}" for name in NOT_COMPILED]
