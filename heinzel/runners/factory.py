"""The runner for a settings table: the one place that maps a ``kind`` to its adapter."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from heinzel.runners.base import AgentRunner
from heinzel.runners.claude_code import ClaudeCodeRunner
from heinzel.runners.command import CommandRunner
from heinzel.runners.settings import ClaudeCodeSettings, CommandSettings

__all__ = ["build_runner"]


def build_runner(
    name: str,
    settings: ClaudeCodeSettings | CommandSettings,
    *,
    environ: Mapping[str, str] | None = None,
    tmp_parent: Path | None = None,
) -> AgentRunner:
    """The adapter for ``[runners.<name>]``; raises the table's coded configuration errors."""
    if isinstance(settings, ClaudeCodeSettings):
        return ClaudeCodeRunner(name, settings, environ=environ, tmp_parent=tmp_parent)
    return CommandRunner(name, settings, environ=environ, tmp_parent=tmp_parent)
