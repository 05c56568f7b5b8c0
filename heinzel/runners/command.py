"""The generic command adapter: any agent CLI from a list of arguments, fail closed.

It refuses to run (HZR010) until the user sets ``command_enforces_read_only =
true``: the command must keep its agent read-only itself, which hz can't
check. The command runs without a shell; placeholders are filled inside single
arguments; the prompt and the contract go to files in a private directory that
is removed afterwards; the environment is an allowlist; the report is read from
stdout or from ``{output_file}`` (never through a symbolic link, at most 8 MiB)
as text, one JSON object, or pi's JSON events.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path

from heinzel.runners import placeholders
from heinzel.runners.base import AgentResult, Status, check_limits, select_tools
from heinzel.runners.command_output import ParsedOutput, parse_json_report, parse_text_report
from heinzel.runners.environment import CREDENTIAL_PREFIX, command_env
from heinzel.runners.errors import RunnerError
from heinzel.runners.files import private_dir, read_output_file, write_private_file
from heinzel.runners.pi import parse_pi_events
from heinzel.runners.process import (
    KILL_GRACE_S,
    OUTPUT_CAP,
    Monotonic,
    ProcessOutcome,
    resolve_executable,
    run_bounded,
)
from heinzel.runners.settings import CommandSettings

__all__ = ["READ_ONLY_HINT", "CommandRunner"]

READ_ONLY_HINT = (
    "set [runners.{name}] command_enforces_read_only = true once the command restricts its "
    "agent to reading (for pi: --tools read,grep,find,ls)"
)
"""What HZR010 tells the user to do (``name``: the runner's table)."""


def _check(name: str, settings: CommandSettings) -> None:
    """Everything about the table that is wrong whether or not it may run."""
    if not settings.command:
        raise RunnerError(
            "HZR012",
            f"[runners.{name}] has no command",
            'set command = ["program", "arg", ...]; docs/runners.md shows one for pi',
        )
    placeholders.validate(name, (*settings.command, *settings.extra))
    used = placeholders.placeholders_used(name, (*settings.command, *settings.extra))
    if settings.output == "file" and "output_file" not in used:
        raise RunnerError(
            "HZR013",
            f'[runners.{name}] reads output = "file" but its command has no {{output_file}}',
            'pass {output_file} to the command, or set output = "stdout"',
        )
    credentials = [n for n in settings.command_env if n.upper().startswith(CREDENTIAL_PREFIX)]
    if credentials:
        raise RunnerError(
            "HZR014",
            f"[runners.{name}] command_env names {', '.join(credentials)}; "
            f"{CREDENTIAL_PREFIX}* never reaches an agent",
            "let the command read its own credential from a variable of its own name",
        )


class CommandRunner:
    """Runs a configured agent CLI, read-only by the user's statement, bounded by hz."""

    def __init__(
        self,
        name: str,
        settings: CommandSettings,
        *,
        environ: Mapping[str, str] | None = None,
        grace: float = KILL_GRACE_S,
        clock: Monotonic = time.monotonic,
        tmp_parent: Path | None = None,
    ) -> None:
        _check(name, settings)
        self.name = name
        self.settings = settings
        self._environ = environ
        self._grace = grace
        self._clock = clock
        self._tmp_parent = tmp_parent
        self._used = placeholders.placeholders_used(name, (*settings.command, *settings.extra))

    def refusal(self) -> str | None:
        """Why this runner refuses to run, or None when it may."""
        if not self.settings.command_enforces_read_only:
            return (
                "command_enforces_read_only is not true: hz can't check that the command "
                "keeps its agent read-only, so it runs nothing until you state it does"
            )
        return None

    def env(self) -> dict[str, str]:
        """The allowlisted environment a run gets."""
        environ = os.environ if self._environ is None else self._environ
        return command_env(environ, self.settings.command_env)

    def unenforced(self, *, budget: float | None) -> tuple[str, ...]:
        """The limits a run can't have because the command does not take them."""
        missing = ["read_only (the command's own promise; hz can't check it)"]
        if "tools" not in self._used:
            missing.append("tools (the command takes no {tools})")
        if budget is not None and "max_usd" not in self._used:
            missing.append("budget (the command takes no {max_usd})")
        if self.settings.max_turns is not None:
            missing.append("max_turns (the command runner has no turn limit)")
        return tuple(missing)

    def run(
        self,
        prompt: str,
        *,
        contract: str,
        tools: Sequence[str],
        timeout: float,
        budget: float | None,
        working_dir: Path | None = None,
    ) -> AgentResult:
        """One run of the command; see `AgentRunner.run`."""
        refusal = self.refusal()
        if refusal:
            raise RunnerError(
                "HZR010",
                f"runner {self.name!r} refuses to run: {refusal}",
                READ_ONLY_HINT.format(name=self.name),
            )
        check_limits(self.name, timeout, budget)
        chosen = select_tools(self.name, self.settings.tools, tools)
        env = self.env()
        program = self.settings.program()
        assert program is not None  # _check refused an empty command
        executable = resolve_executable(self.name, program, env)
        with ExitStack() as stack:
            scratch = stack.enter_context(private_dir("hz-command-", self._tmp_parent))
            cwd = working_dir or stack.enter_context(private_dir("hz-work-", self._tmp_parent))
            values = {
                "prompt_file": str(write_private_file(scratch / "prompt.md", prompt)),
                "contract_file": str(write_private_file(scratch / "contract.md", contract)),
                "output_file": str(scratch / "output"),
                "working_dir": str(cwd),
                "tools": ",".join(chosen),
                "model": self.settings.model or "",
                "timeout_seconds": str(math.ceil(timeout)),
                "max_usd": "" if budget is None else repr(budget),
            }
            argv = placeholders.fill(
                self.name, (*self.settings.command, *self.settings.extra), values
            )
            argv[0] = executable
            outcome = run_bounded(
                argv,
                stdin=prompt if self.settings.prompt_on_stdin else "",
                cwd=cwd,
                env=env,
                timeout=timeout,
                grace=self._grace,
                clock=self._clock,
            )
            data, problem = self._output(outcome, Path(values["output_file"]))
        parsed = self._parse(data) if data is not None else ParsedOutput(reason=problem)
        status: Status = "completed"
        reason = parsed.reason
        if outcome.timed_out:
            status, reason = "timeout", f"stopped at the {timeout:g} s timeout"
        elif outcome.returncode != 0:
            status = "failed"
            reason = (
                f"{outcome.exit_description()}: {outcome.stderr_tail(500) or reason or 'no stderr'}"
            )
        elif reason is not None:
            status = "failed"
        return AgentResult(
            runner=self.name,
            model=parsed.model or self.settings.model,
            status=status,
            report=parsed.report if status == "completed" else "",
            tool_calls=parsed.tool_calls,
            turns=parsed.turns,
            usage=parsed.usage,
            cost_usd=parsed.cost_usd,
            duration_s=outcome.duration_s,
            reason=reason,
            unenforced_limits=self.unenforced(budget=budget),
            transcript=(data if data is not None else outcome.stdout).decode(
                "utf-8", errors="replace"
            ),
        )

    def _output(
        self, outcome: ProcessOutcome, output_file: Path
    ) -> tuple[bytes | None, str | None]:
        if self.settings.output == "file":
            read = read_output_file(output_file, OUTPUT_CAP)
            return read.data, read.problem
        if outcome.stdout_truncated:
            return None, f"stdout is larger than {OUTPUT_CAP} bytes; refused"
        return outcome.stdout, None

    def _parse(self, data: bytes) -> ParsedOutput:
        if self.settings.output_format == "json":
            return parse_json_report(data, self.settings.output_key)
        if self.settings.output_format == "pi-json":
            return parse_pi_events(data)
        return parse_text_report(data)
