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
from heinzel.runners.claude_probe import ProbeCache
from heinzel.runners.command import READ_ONLY_HINT, CommandRunner
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
    """Claude Code's isolation flags and whether the installed version has each (empty
    when no version could be read)."""
    unenforced_limits: tuple[str, ...]
    refuses: bool
    refusal: str | None
    problems: tuple[str, ...]
    """Rendered coded errors (``CODE: message``) that stop the runner."""
    fixes: tuple[str, ...] = ()
    """What to do about the problems (each coded error's hint, and the refusal's)."""


class _Found:
    """The problems of one check and their fixes, in the order they were found."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.fixes: list[str] = []

    def add(self, error: RunnerError) -> None:
        self.problems.append(f"{error.code}: {error.message}")
        if error.hint and error.hint not in self.fixes:
            self.fixes.append(error.hint)


def _check_claude(
    name: str, settings: ClaudeCodeSettings, environ: Mapping[str, str], cache: ProbeCache | None
) -> RunnerCheck:
    found = _Found()
    executable = version = None
    isolation: dict[str, bool] = {}
    unenforced: tuple[str, ...] = ()
    try:  # the table itself (tools, extra): refused before anything runs
        ClaudeCodeRunner(name, settings, environ=environ, cache=cache)
    except RunnerError as error:
        found.add(error)
    try:  # the installed build, whatever the table says
        env = claude_env(environ)
        executable = resolve_executable(name, settings.program(), env)
        caps = (cache or ProbeCache()).probe(executable, env)
        version = caps.version_text
        isolation = caps.isolation()
        unenforced = caps.unenforced(budget=_ASSUMED_BUDGET, max_turns=settings.max_turns)
        if caps.problems():
            found.add(
                RunnerError(
                    "HZR021",
                    "; ".join(caps.problems()),
                    "update Claude Code: hz needs --tools and --permission-mode dontAsk",
                )
            )
    except RunnerError as error:
        found.add(error)
    return RunnerCheck(
        name=name,
        kind="claude-code",
        ok=not found.problems,
        executable=executable,
        on_path=executable is not None,
        version=version,
        isolation=isolation,
        unenforced_limits=unenforced,
        refuses=bool(found.problems),
        refusal="; ".join(found.problems) or None,
        problems=tuple(found.problems),
        fixes=tuple(found.fixes),
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
    found = _Found()
    executable = version = refusal = None
    unenforced: tuple[str, ...] = ()
    try:
        runner = CommandRunner(name, settings, environ=environ)
        refusal = runner.refusal()
        unenforced = runner.unenforced(budget=_ASSUMED_BUDGET)
    except RunnerError as error:
        found.add(error)
    program = settings.program()
    env = command_env(environ, settings.command_env)
    if program is not None:
        try:
            executable = resolve_executable(name, program, env)
        except RunnerError as error:
            found.add(error)
    if executable is not None and refusal is None and not found.problems:
        version = _command_version(executable, env)
    refuses = refusal is not None or bool(found.problems)
    fixes = ([READ_ONLY_HINT.format(name=name)] if refusal is not None else []) + found.fixes
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
        refusal=refusal or ("; ".join(found.problems) or None),
        problems=tuple(found.problems),
        fixes=tuple(fixes),
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
