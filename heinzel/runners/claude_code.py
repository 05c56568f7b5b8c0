"""The Claude Code adapter: ``claude -p`` as a bounded, read-only agent run.

The prompt goes on standard input and the contract into a file of a private
directory (``--append-system-prompt-file``), so neither shows in the process
list. Output is ``stream-json`` (``--verbose`` is required with it) so tool
calls can be counted. Isolation is whatever the installed build offers of
``--restricted``, ``--safe-mode``, ``--disable-slash-commands``,
``--strict-mcp-config`` and ``--no-session-persistence``; tools are pinned with
``--tools=`` and ``--allowedTools=`` (the ``=`` form, because both flags are
variadic) under ``--permission-mode dontAsk``, so anything not pre-approved is
denied. What the build can't enforce is listed in the result.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path

from heinzel.runners.base import AgentResult, Status, check_limits, select_tools
from heinzel.runners.claude_probe import ClaudeCapabilities, ProbeCache
from heinzel.runners.claude_stream import parse_stream
from heinzel.runners.environment import claude_env
from heinzel.runners.errors import RunnerError
from heinzel.runners.files import private_dir, write_private_file
from heinzel.runners.process import KILL_GRACE_S, Monotonic, resolve_executable, run_bounded
from heinzel.runners.settings import ClaudeCodeSettings

__all__ = ["EXTRA_FLAGS_ALLOWED", "FILE_READERS", "WRITING_TOOLS", "ClaudeCodeRunner"]

EXTRA_FLAGS_ALLOWED = frozenset(
    {
        "--fallback-model",
        "--effort",
        "--disallowedTools",
        "--disallowed-tools",
        "--exclude-dynamic-system-prompt-sections",
    }
)
"""Flags ``extra`` may add: none of them widens what the agent can do or read."""

FILE_READERS = frozenset({"Read", "Grep", "Glob", "LS", "NotebookRead"})
"""Tools Claude Code allows inside the working directory without approval. They are never
pre-approved with --allowedTools: that would allow them on every path of the machine, while
under dontAsk a read outside the working directory is denied (verified with 2.1.197)."""
WRITING_TOOLS = frozenset({"Bash", "Edit", "Write", "MultiEdit", "NotebookEdit", "PowerShell"})
"""Claude Code tools that write files or run code; a profile naming one is refused."""

_SHARED_CACHE = ProbeCache()


def _check_profile(runner: str, tools: Sequence[str]) -> None:
    writers = [tool for tool in tools if tool.split("(", 1)[0].strip() in WRITING_TOOLS]
    if writers:
        raise RunnerError(
            "HZR023",
            f"[runners.{runner}] tools names {', '.join(writers)}, which can write or run code",
            "a handoff is read-only: keep tools to reading ones such as Read, Grep, Glob",
        )


def _check_extra(runner: str, extra: Sequence[str]) -> None:
    for arg in extra:
        flag = arg.split("=", 1)[0]
        if flag not in EXTRA_FLAGS_ALLOWED:
            raise RunnerError(
                "HZR022",
                f"[runners.{runner}] extra holds {arg!r}, which hz does not pass to Claude Code",
                "write extras as --flag=value, using only: "
                + ", ".join(sorted(EXTRA_FLAGS_ALLOWED)),
            )


class ClaudeCodeRunner:
    """Runs the Claude Code CLI headless, read-only and bounded (an `AgentRunner`)."""

    def __init__(
        self,
        name: str,
        settings: ClaudeCodeSettings,
        *,
        environ: Mapping[str, str] | None = None,
        cache: ProbeCache | None = None,
        grace: float = KILL_GRACE_S,
        clock: Monotonic = time.monotonic,
        tmp_parent: Path | None = None,
    ) -> None:
        _check_profile(name, settings.tools)
        _check_extra(name, settings.extra)
        self.name = name
        self.settings = settings
        self._environ = environ
        self._cache = cache or _SHARED_CACHE
        self._grace = grace
        self._clock = clock
        self._tmp_parent = tmp_parent

    def env(self) -> dict[str, str]:
        """The environment a run gets: hz's without credentials, plus the quiet switches."""
        return claude_env(os.environ if self._environ is None else self._environ)

    def capabilities(self) -> ClaudeCapabilities:
        """What the installed build offers (HZR002 not found, HZR020 unusable version)."""
        env = self.env()
        executable = resolve_executable(self.name, self.settings.program(), env)
        return self._cache.probe(executable, env)

    def argv(
        self,
        caps: ClaudeCapabilities,
        *,
        contract_file: Path,
        tools: Sequence[str],
        budget: float | None,
    ) -> list[str]:
        """The command line of one run, built from what ``caps`` says the build has."""
        argv = [caps.executable, "-p", "--output-format", "stream-json", "--verbose"]
        argv.append(f"--append-system-prompt-file={contract_file}")
        argv += caps.isolation_args()
        argv.append(f"--tools={','.join(tools)}")
        approve = [tool for tool in tools if tool.split("(", 1)[0] not in FILE_READERS]
        allowed = caps.allowed_tools_flag()
        if approve and allowed:
            argv.append(f"{allowed}={','.join(approve)}")
        argv += ["--permission-mode", "dontAsk"]
        if budget is not None and caps.has("--max-budget-usd"):
            argv.append(f"--max-budget-usd={budget!r}")
        if self.settings.max_turns is not None:
            argv.append(f"--max-turns={self.settings.max_turns}")
        if self.settings.model:
            argv.append(f"--model={self.settings.model}")
        argv += self.settings.extra
        return argv

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
        """One ``claude -p`` run; see `AgentRunner.run`."""
        check_limits(self.name, timeout, budget)
        chosen = select_tools(self.name, self.settings.tools, tools)
        caps = self.capabilities()
        problems = caps.problems()
        if problems:
            raise RunnerError(
                "HZR021",
                f"Claude Code {caps.version_text} at {caps.executable} can't run read-only: "
                + "; ".join(problems),
                "update Claude Code: hz needs --tools and --permission-mode dontAsk",
            )
        env = self.env()
        with ExitStack() as stack:
            scratch = stack.enter_context(private_dir("hz-claude-", self._tmp_parent))
            contract_file = write_private_file(scratch / "contract.md", contract)
            cwd = working_dir or stack.enter_context(private_dir("hz-work-", self._tmp_parent))
            argv = self.argv(caps, contract_file=contract_file, tools=chosen, budget=budget)
            outcome = run_bounded(
                argv,
                stdin=prompt,
                cwd=cwd,
                env=env,
                timeout=timeout,
                grace=self._grace,
                clock=self._clock,
            )
        transcript = outcome.stdout.decode("utf-8", errors="replace")
        summary = parse_stream(transcript)
        status: Status = summary.status
        reason = summary.reason
        report = summary.report
        if outcome.timed_out:
            status, reason = "timeout", f"stopped at the {timeout:g} s timeout"
        elif not summary.has_result:
            detail = outcome.stderr_tail(500) or "no output"
            if outcome.stdout_truncated:
                detail = f"stdout exceeded {len(outcome.stdout)} bytes; {detail}"
            reason = f"{outcome.exit_description()} without a result event: {detail}"
        elif status == "completed" and outcome.returncode != 0:
            status, reason = "failed", f"{outcome.exit_description()} after a success result"
        elif status == "completed" and not report.strip():
            status, reason = "failed", "the agent returned an empty report"
        if status != "completed":
            report = ""
        return AgentResult(
            runner=self.name,
            model=summary.model,
            status=status,
            report=report,
            tool_calls=summary.tool_calls,
            turns=summary.turns,
            usage=summary.usage,
            cost_usd=summary.cost_usd,
            duration_s=outcome.duration_s,
            reason=reason,
            unenforced_limits=caps.unenforced(budget=budget, max_turns=self.settings.max_turns),
            transcript=transcript,
        )
