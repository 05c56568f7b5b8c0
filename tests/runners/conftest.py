"""Fixtures of the runner tests: the fake agent, the fake Messages API and the real claude."""

from __future__ import annotations

import importlib.util
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CLAUDE_VERSION = "2.1.197"
"""What `npm install @anthropic-ai/claude-code` gives on Node 20; the Makefile pins it."""


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"hz_runner_tests_{name}", HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


FAKE_ANTHROPIC = _load("fake_anthropic")


@pytest.fixture
def fake_agent() -> Callable[..., list[str]]:
    """The command line of the fake agent in a mode, with every placeholder it reads."""

    def command(mode: str, *extra: str) -> list[str]:
        return [
            sys.executable,
            str(HERE / "fake_agent.py"),
            mode,
            "prompt={prompt_file}",
            "contract={contract_file}",
            "out={output_file}",
            "cwd={working_dir}",
            *extra,
        ]

    return command


@pytest.fixture
def base_env(tmp_path: Path) -> dict[str, str]:
    """A small, explicit environment: PATH, a fresh HOME, a UTF-8 locale."""
    home = tmp_path / "home"
    home.mkdir()
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8"}


@pytest.fixture
def fake_api() -> ModuleType:
    """The fake Anthropic Messages API module (`Server`, `text`, `tool_use`)."""
    return FAKE_ANTHROPIC


@pytest.fixture
def claude_executable() -> str:
    """The real Claude Code binary installed by `make test` (skips with the reason when absent)."""
    path = Path(os.environ.get("HZ_TEST_CLAUDE", ROOT / ".venv/claude/node_modules/.bin/claude"))
    if not path.exists():
        pytest.skip(
            f"the real Claude Code {CLAUDE_VERSION} is not installed at {path}: "
            "`make test` installs it when npm exists (node and npm are missing here?)"
        )
    return str(path)


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def wait_dead(pid: int, bound_s: float = 10.0) -> bool:
    """True once ``pid`` has exited (a zombie counts), waiting at most ``bound_s`` for it."""
    import select

    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([fd], [], [], bound_s)
        return bool(readable)
    finally:
        os.close(fd)


@pytest.fixture
def is_dead() -> Callable[[int], bool]:
    """Whether a process has exited, waited for by its pidfd (no polling)."""
    if not hasattr(os, "pidfd_open"):
        pytest.skip("needs os.pidfd_open (Linux) to watch a process exit without polling")
    return wait_dead
