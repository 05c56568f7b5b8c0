"""What ``hz system doctor`` says about a bound runner, as data the command renders.

For Claude Code: is it on PATH, which version, which isolation flags that
version has, and what it can't enforce. For the command runner: is the
program there, its version (only asked when the runner may run at all),
whether it refuses to run and why, and what it can't enforce. Nothing here
raises; every problem becomes a line of the check.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict

from heinzel.runners.claude_code import ClaudeCodeRunner
from heinzel.runners.claude_probe import ISOLATION_FLAGS, ProbeCache
from heinzel.runners.command import CommandRunner
from heinzel.runners.environment import claude_env, command_env
from heinzel.runners.errors import RunnerError
from heinzel.runners.files import private_dir
from heinzel.runners.process import resolve_executable, run_bounded
from heinzel.runners.settings import ClaudeCodeSettings, CommandSettings

__all__ = ["RunnerCheck", "check_runner"]

_VERSION_TIMEOUT_S = 10.0
_ASSUMED_BUDGET = 1.0  # a handoff always passes a budget share when the turn has a cap


class RunnerCheck(BaseModel):
    """One runner's health: ``ok`` when it would run, and every reason it would not."""

    model_config = ConfigDict(frozen=True)

    name: str
    kind: Literal["claude-code", "command"]
    ok: bool
    executable: str | None
    on_path: bool
    version: str | None
    isolation: dict[str, bool]
    """Claude Code's isolation flags and whether the installed version has each."""
    unenforced_limits: tuple[str, ...]
    refuses: bool
    refusal: str | None
    problems: tuple[str, ...]
    """Rendered coded errors (``CODE: message``) that stop the runner."""


def _render(error: RunnerError) -> str:
    return f"{error.code}: {error.message}"


def _check_claude(
    name: str, settings: ClaudeCodeSettings, environ: Mapping[str, str], cache: ProbeCache | None
) -> RunnerCheck:
    problems: list[str] = []
    executable = version = None
    isolation = dict.fromkeys(ISOLATION_FLAGS, False)
    unenforced: tuple[str, ...] = ()
    try:
        runner = ClaudeCodeRunner(name, settings, environ=environ, cache=cache)
        executable = resolve_executable(name, settings.program(), claude_env(environ))
        caps = runner.capabilities()
        version = caps.version_text
        isolation = caps.isolation()
        unenforced = caps.unenforced(budget=_ASSUMED_BUDGET, max_turns=settings.max_turns)
        problems += [f"HZR021: {problem}" for problem in caps.problems()]
    except RunnerError as error:
        problems.append(_render(error))
    return RunnerCheck(
        name=name,
        kind="claude-code",
        ok=not problems,
        executable=executable,
        on_path=executable is not None,
        version=version,
        isolation=isolation,
        unenforced_limits=unenforced,
        refuses=bool(problems),
        refusal="; ".join(problems) or None,
        problems=tuple(problems),
    )


def _command_version(executable: str, env: Mapping[str, str]) -> str | None:
    with private_dir("hz-doctor-") as cwd:
        outcome = run_bounded(
            [executable, "--version"], cwd=cwd, env=env, timeout=_VERSION_TIMEOUT_S
        )
    if outcome.returncode != 0 or outcome.timed_out:
        return None
    for stream in (outcome.stdout, outcome.stderr):  # pi prints its version on stderr
        lines = stream.decode("utf-8", errors="replace").strip().splitlines()
        if lines:
            return lines[0][:200]
    return None


def _check_command(name: str, settings: CommandSettings, environ: Mapping[str, str]) -> RunnerCheck:
    problems: list[str] = []
    executable = version = refusal = None
    unenforced: tuple[str, ...] = ()
    try:
        runner = CommandRunner(name, settings, environ=environ)
        refusal = runner.refusal()
        unenforced = runner.unenforced(budget=_ASSUMED_BUDGET)
    except RunnerError as error:
        problems.append(_render(error))
    program = settings.program()
    env = command_env(environ, settings.command_env)
    if program is not None:
        try:
            executable = resolve_executable(name, program, env)
        except RunnerError as error:
            problems.append(_render(error))
    if executable is not None and refusal is None and not problems:
        version = _command_version(executable, env)
    refuses = refusal is not None or bool(problems)
    return RunnerCheck(
        name=name,
        kind="command",
        ok=not refuses,
        executable=executable,
        on_path=executable is not None,
        version=version,
        isolation={},
        unenforced_limits=unenforced,
        refuses=refuses,
        refusal=refusal or ("; ".join(problems) or None),
        problems=tuple(problems),
    )


def check_runner(
    name: str,
    settings: ClaudeCodeSettings | CommandSettings,
    *,
    environ: Mapping[str, str] | None = None,
    cache: ProbeCache | None = None,
) -> RunnerCheck:
    """Check one ``[runners.<name>]`` table against this machine."""
    env = os.environ if environ is None else environ
    if isinstance(settings, ClaudeCodeSettings):
        return _check_claude(name, settings, env, cache)
    return _check_command(name, settings, env)
