"""What the installed Claude Code offers, read from ``claude --version`` and ``claude --help``.

Isolation flags differ between builds (``--restricted`` exists only in newer
ones), so the adapter asks the binary instead of assuming. Two flags the
adapter needs are hidden from ``--help`` (``--append-system-prompt-file``,
``--max-turns``); both were verified by running 2.1.197 and 2.1.332, so they are
assumed from 2.1.197 on, the oldest version hz supports. Results are cached per
executable file and version.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from heinzel.runners.errors import RunnerError
from heinzel.runners.files import private_dir
from heinzel.runners.process import run_bounded

__all__ = [
    "ISOLATION_FLAGS",
    "MIN_VERSION",
    "ClaudeCapabilities",
    "ProbeCache",
    "parse_help_flags",
    "parse_version",
]

MIN_VERSION = (2, 1, 197)
"""The oldest Claude Code whose hidden flags hz verified."""
ISOLATION_FLAGS = {
    "--restricted": "--restricted",
    "--safe-mode": "--safe-mode",
    "--setting-sources": "--setting-sources=",
    "--disable-slash-commands": "--disable-slash-commands",
    "--strict-mcp-config": "--strict-mcp-config",
    "--no-session-persistence": "--no-session-persistence",
}
"""Each isolation flag and the argument hz passes for it, whenever the build lists it.
``--setting-sources=`` (no source) stops user, project and local settings files: their
``permissions.allow`` rules would otherwise pre-approve reads outside the working directory,
even under ``--safe-mode`` (verified with 2.1.197)."""
REQUIRED_FLAGS = ("--print", "--output-format", "--verbose", "--permission-mode", "--tools")
"""Without these hz can neither read the run nor keep it to the tools profile."""
ALLOWED_TOOLS_FLAGS = ("--allowedTools", "--allowed-tools")
_PROBE_TIMEOUT_S = 30.0
_OPTION_LINE = re.compile(r"^ {2,4}(?:-\w,\s+)?(--[A-Za-z][\w-]*)(?:,\s+(--[A-Za-z][\w-]*))?")
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def parse_help_flags(help_text: str) -> frozenset[str]:
    """The long options ``--help`` lists (continuation lines are not options)."""
    flags: set[str] = set()
    for line in help_text.splitlines():
        match = _OPTION_LINE.match(line)
        if match:
            flags.update(name for name in match.groups() if name)
    return frozenset(flags)


def parse_version(text: str) -> tuple[int, int, int] | None:
    """``2.1.197 (Claude Code)`` -> (2, 1, 197); None when there is no version in it."""
    match = _VERSION.search(text)
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


@dataclass(frozen=True)
class ClaudeCapabilities:
    """The flags one Claude Code build has, as far as hz uses them."""

    executable: str
    version: tuple[int, int, int]
    flags: frozenset[str]
    dont_ask: bool
    """``--permission-mode`` offers ``dontAsk``."""

    @property
    def version_text(self) -> str:
        return ".".join(str(part) for part in self.version)

    def has(self, flag: str) -> bool:
        """Listed by ``--help``, or hidden but verified for every supported version."""
        return flag in self.flags or flag in ("--append-system-prompt-file", "--max-turns")

    def allowed_tools_flag(self) -> str | None:
        return next((flag for flag in ALLOWED_TOOLS_FLAGS if flag in self.flags), None)

    def isolation(self) -> dict[str, bool]:
        """Each isolation flag and whether this build has it."""
        return {flag: self.has(flag) for flag in ISOLATION_FLAGS}

    def isolation_args(self) -> list[str]:
        """The isolation arguments this build takes."""
        return [arg for flag, arg in ISOLATION_FLAGS.items() if self.has(flag)]

    def unenforced(self, *, budget: float | None, max_turns: int | None) -> tuple[str, ...]:
        """The limits and isolation a run with these settings can't get from this build."""
        missing = [
            f"{flag} (not offered by Claude Code {self.version_text})"
            for flag, present in self.isolation().items()
            if not present
        ]
        if budget is not None and not self.has("--max-budget-usd"):
            missing.append("budget (--max-budget-usd not offered)")
        if max_turns is not None and not self.has("--max-turns"):
            missing.append("max_turns (--max-turns not offered)")
        return tuple(missing)

    def problems(self) -> list[str]:
        """What makes this build unusable for a read-only run; empty when it is usable."""
        found = [f"{flag} is missing" for flag in REQUIRED_FLAGS if flag not in self.flags]
        if not self.dont_ask:
            found.append("--permission-mode does not offer dontAsk")
        return found


class ProbeCache:
    """Capabilities per executable and version; the version per executable file."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._versions: dict[tuple[str, int, int, int], str] = {}
        self._caps: dict[tuple[str, str], ClaudeCapabilities] = {}

    def probe(self, executable: str, env: Mapping[str, str]) -> ClaudeCapabilities:
        """The capabilities of the Claude Code at ``executable`` (HZR020 when unusable)."""
        stat = Path(executable).stat()
        file_key = (executable, stat.st_ino, stat.st_size, stat.st_mtime_ns)
        with self._lock:
            version_text = self._versions.get(file_key)
        if version_text is None:
            version_text = _ask(executable, "--version", env)
            with self._lock:
                self._versions[file_key] = version_text
        with self._lock:
            cached = self._caps.get((executable, version_text))
        if cached is not None:
            return cached
        version = parse_version(version_text)
        if version is None:
            raise RunnerError(
                "HZR020",
                f"{executable} --version printed no version: {version_text[:200]!r}",
                "point [runners.<name>] executable at the Claude Code CLI "
                "(npm @anthropic-ai/claude-code)",
            )
        if version < MIN_VERSION:
            raise RunnerError(
                "HZR020",
                f"Claude Code {version_text.strip()} is older than "
                f"{'.'.join(map(str, MIN_VERSION))}, the oldest hz supports",
                "update Claude Code (npm install -g @anthropic-ai/claude-code)",
            )
        help_text = _ask(executable, "--help", env)
        caps = ClaudeCapabilities(
            executable=executable,
            version=version,
            flags=parse_help_flags(help_text),
            dont_ask="dontAsk" in help_text,
        )
        with self._lock:
            self._caps[(executable, version_text)] = caps
        return caps


def _ask(executable: str, flag: str, env: Mapping[str, str]) -> str:
    with private_dir("hz-probe-") as cwd:
        outcome = run_bounded([executable, flag], cwd=cwd, env=env, timeout=_PROBE_TIMEOUT_S)
    if outcome.returncode != 0 or outcome.timed_out:
        raise RunnerError(
            "HZR020",
            f"{executable} {flag} failed ({outcome.exit_description()}): "
            f"{outcome.stderr_tail(300)}",
            "run it by hand to see why; reinstall Claude Code if it does not start",
        )
    return outcome.stdout.decode("utf-8", errors="replace")
