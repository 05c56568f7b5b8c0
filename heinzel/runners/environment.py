"""The environment an agent gets: hz's own minus credentials, or an allowlist.

Claude Code gets hz's environment without ``HZ_CREDENTIAL_*``, plus the
switches that stop its nonessential traffic and auto-update. A generic command
gets only an allowlist: PATH, HOME, LANG, LC_*, TMPDIR and the names the user
listed in ``command_env``; a ``HZ_CREDENTIAL_*`` name is never passed, listed
or not.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

__all__ = ["CLAUDE_SWITCHES", "CREDENTIAL_PREFIX", "claude_env", "command_env"]

CREDENTIAL_PREFIX = "HZ_CREDENTIAL_"
CLAUDE_SWITCHES = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
}
"""Set for every Claude Code run: no telemetry or other nonessential calls, no self-update."""
_ALLOWED = ("PATH", "HOME", "LANG", "TMPDIR")


def _is_credential(name: str) -> bool:
    return name.upper().startswith(CREDENTIAL_PREFIX)


def claude_env(environ: Mapping[str, str]) -> dict[str, str]:
    """hz's environment without credentials, plus Claude Code's quiet switches."""
    env = {name: value for name, value in environ.items() if not _is_credential(name)}
    env.update(CLAUDE_SWITCHES)
    return env


def command_env(environ: Mapping[str, str], passed: Iterable[str]) -> dict[str, str]:
    """Only the allowlisted names present in ``environ``; never a credential."""
    wanted = set(_ALLOWED) | set(passed)
    return {
        name: value
        for name, value in environ.items()
        if (name in wanted or name.startswith("LC_")) and not _is_credential(name)
    }
