"""Runner settings: the ``[runners.<name>]`` tables of the configuration, as pydantic models.

Two kinds exist. ``claude-code`` runs the Claude Code CLI with the isolation its
installed version offers; ``command`` runs any agent CLI from a list of
arguments and fails closed until the user states that the command restricts its
agent to reading (``command_enforces_read_only = true``). Parsing turns every
validation problem into a coded `RunnerError` naming the table and the key.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from heinzel.runners.errors import RunnerError

__all__ = [
    "CLAUDE_READ_ONLY_TOOLS",
    "ClaudeCodeSettings",
    "CommandSettings",
    "RunnerSettings",
    "parse_runner_settings",
    "parse_runners_table",
]

CLAUDE_READ_ONLY_TOOLS = ("Read", "Grep", "Glob")
"""The Claude Code tools a profile allows when the table names none."""


class _Settings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    executable: str | None = None
    """The program to run; a bare name is looked up on PATH before the run."""
    model: str | None = None
    """The model the agent should use (``--model`` / ``{model}``); None: the agent's default."""
    tools: tuple[str, ...] = ()
    """The tools profile: the only tools a run may ask for, in the runner's own naming."""
    max_turns: int | None = Field(default=None, gt=0)
    """A turn limit, where the runner can enforce one."""
    extra: tuple[str, ...] = ()
    """Further arguments, appended after hz's own (checked so they can't widen the run)."""


class ClaudeCodeSettings(_Settings):
    """``kind = "claude-code"``: ``claude -p`` with the isolation its version offers."""

    kind: Literal["claude-code"]
    tools: tuple[str, ...] = CLAUDE_READ_ONLY_TOOLS

    def program(self) -> str:
        """The executable to resolve: ``executable`` or ``claude``."""
        return self.executable or "claude"


class CommandSettings(_Settings):
    """``kind = "command"``: any agent CLI, run without a shell, fail closed."""

    kind: Literal["command"]
    command: tuple[str, ...] = ()
    """The argument list; ``command[0]`` is the program unless ``executable`` overrides it."""
    command_enforces_read_only: bool = False
    """The user's statement that the command keeps its agent read-only; hz can't check it."""
    command_env: tuple[str, ...] = ()
    """Names of environment variables passed through beside the fixed allowlist."""
    output: Literal["stdout", "file"] = "stdout"
    """Where the report comes from: stdout, or the file at ``{output_file}``."""
    output_format: Literal["text", "json", "pi-json"] = "text"
    """How to read it: plain text, one JSON object, or pi's ``--mode json`` event lines."""
    output_key: str = "report"
    """With ``output_format = "json"``: the key holding the report."""
    prompt_on_stdin: bool = False
    """Also write the prompt to the command's standard input (pi reads it there)."""

    def program(self) -> str | None:
        """The executable: ``executable`` or ``command[0]``; None when both are absent."""
        if self.executable:
            return self.executable
        return self.command[0] if self.command else None


RunnerSettings = Annotated[ClaudeCodeSettings | CommandSettings, Field(discriminator="kind")]
"""One ``[runners.<name>]`` table, told apart by its ``kind``."""

_ADAPTER: TypeAdapter[ClaudeCodeSettings | CommandSettings] = TypeAdapter(RunnerSettings)


def parse_runner_settings(
    name: str, table: Mapping[str, object]
) -> ClaudeCodeSettings | CommandSettings:
    """The settings of the table ``[runners.<name>]``; HZR001 names every key that is wrong,
    and its hint the keys the table's kind takes (the closest one to a misspelt key)."""
    try:
        return _ADAPTER.validate_python(dict(table))
    except ValidationError as exc:
        errors = exc.errors()
    kind = table.get("kind")
    model = _KINDS.get(kind) if isinstance(kind, str) else None
    if model is None:
        shown = "missing" if kind is None else f"{kind!r}"
        raise RunnerError(
            "HZR001",
            f"[runners.{name}] kind is {shown}",
            'set kind = "claude-code" (Claude Code) or kind = "command" (any agent CLI, '
            "such as pi)",
        )
    keys = sorted(model.model_fields)
    problems = []
    close: list[str] = []
    for error in errors:
        key = ".".join(str(part) for part in error["loc"][1:])
        if error["type"] == "extra_forbidden":
            problems.append(f"unknown key {key}")
            close += difflib.get_close_matches(key, keys, n=1)
        else:
            problems.append(f"{key}: {error['msg']}".replace("a valid tuple", "a list"))
    mean = f"did you mean {close[0]!r}? " if close else ""
    raise RunnerError(
        "HZR001",
        f"[runners.{name}] is not a valid runner table: {'; '.join(problems)}",
        f"{mean}a {kind} runner takes: {', '.join(keys)} (docs/runners.md)",
    )


_KINDS: dict[str, type[_Settings]] = {"claude-code": ClaudeCodeSettings, "command": CommandSettings}


def parse_runners_table(
    runners: Mapping[str, object],
) -> dict[str, ClaudeCodeSettings | CommandSettings]:
    """Every table under ``[runners]``, by name; HZR001 for one that is not a table."""
    parsed: dict[str, ClaudeCodeSettings | CommandSettings] = {}
    for name, table in runners.items():
        if not isinstance(table, Mapping):
            raise RunnerError(
                "HZR001",
                f"[runners.{name}] must be a table, not {type(table).__name__}",
                f'write it as [runners.{name}] with kind = "claude-code" or "command"',
            )
        parsed[name] = parse_runner_settings(name, table)
    return parsed
