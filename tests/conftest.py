"""Suite-wide settings: no test ever reaches a real model; the longest tests start first."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Generator

import pytest

os.environ.setdefault("HZ_TESTING", "1")
os.environ.pop("HZ_CRASH_AT", None)
os.environ.pop("HZ_NOW", None)

if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    # A run started as a background job (`make test &`, `nohup`) inherits SIGINT ignored,
    # and so would every process a test starts: the Ctrl-C tests would wait out their
    # timeouts (600 s for `tests/machines/test_loop.py`'s) and fail. A user's shell gives
    # the `hz` it starts SIGINT's default; so does this (tests/test_suite_signals.py).
    signal.signal(signal.SIGINT, signal.default_int_handler)

LONGEST = (
    "tests/team/test_two_machines.py::test_a_week_of_daily_slots",
    "tests/tick/test_model_chaos.py::",  # its tour and random examples: about 150 s loaded
    "tests/ledger/test_kill.py::",
    "tests/e2e/",
    "tests/adapters/test_source_credentials.py::",
    "tests/web/",
    "tests/models/test_chat_turns.py::",
    "tests/team/test_two_machines.py::",
    "tests/models/test_cli_models.py::",
    "tests/models/test_answer_text.py::",
    "tests/loop/test_readme.py::",
    "tests/models/test_cli_paths.py::",
    "tests/hz_mcp/test_mcp_answer.py::",
    "tests/heinzel/test_concurrent_index.py::",
    "tests/adapters/test_github_cli.py::",
    "tests/turns/test_crash.py::TestCrashMatrix::",
    "tests/turns/test_body_crash.py::",
    "tests/models/",
    "tests/loop/test_notices.py::",
    "tests/loop/test_drafts.py::",
    "tests/tick/test_discovery.py::",
    "tests/graph/test_diamond.py::",  # one approved diamond per module: its tests together
    "tests/adapters/test_calendars.py::",
    "tests/loop/test_interrupt.py::",
    "tests/tick/test_chaos.py::",
    "tests/machines/test_crashmatrix.py::",
    "tests/machines/test_notes_agent.py::test_the_crash_matrix",
)
"""Node-id prefixes of the longest tests, longest first, as `pytest -n 3 --durations=0`
measured them (a file of many long tests by their sum). Under pytest-xdist a worker left
alone with a long test at the end idles the other core; started first, the long tests
overlap and the short ones fill in behind them (`make test` runs `--dist worksteal`: the
first worker gets the long half, the second steals from its queue when its own is done)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Order the run longest first (`LONGEST`, then tests marked slow or kill, then the
    rest, each group in collection order); every worker sorts the same collection alike."""

    def rank(item: pytest.Item) -> int:
        for place, prefix in enumerate(LONGEST):
            if item.nodeid.startswith(prefix):
                return place
        marked = item.get_closest_marker("slow") or item.get_closest_marker("kill")
        return len(LONGEST) + (0 if marked else 1)

    items.sort(key=rank)


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Generator[None, object, object]:
    """Collect with bytecode written. pytest keeps a test module's rewritten asserts in its
    ``__pycache__``, unless Python may not write bytecode (``PYTHONDONTWRITEBYTECODE``, set
    on the machines this suite runs on): then every worker parsed and rewrote all 300 test
    modules at every run, about 7 s more CPU a worker (docs/testing.md). hz's own packages
    are compiled at install (the Makefile); the tests are cached at collection the same
    way, and the tests themselves run with the setting as it was."""
    was = sys.dont_write_bytecode
    sys.dont_write_bytecode = False
    try:
        return (yield)
    finally:
        sys.dont_write_bytecode = was
