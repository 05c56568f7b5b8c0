"""Agent runners: coding agents (Claude Code, pi, any CLI) as bounded, read-only helpers of a turn.

The public surface: the `AgentRunner` protocol and its `AgentResult`, the two
adapters, their settings, the doctor's check and the handoff's pure parts.
"""

from heinzel.runners.base import AgentResult, AgentRunner, Status, Usage
from heinzel.runners.claude_code import ClaudeCodeRunner
from heinzel.runners.command import CommandRunner
from heinzel.runners.doctor import RunnerCheck, check_runner
from heinzel.runners.errors import RunnerError
from heinzel.runners.factory import build_runner
from heinzel.runners.handoff import (
    INTERRUPTED_RESULT,
    HandoffBody,
    HandoffOutcome,
    HandoffRecord,
    HandoffShare,
    handoff_instruction,
    handoff_share,
    handoff_workdir,
    interrupted_record,
    run_handoff,
    tool_result_text,
)
from heinzel.runners.pi import PI_RUNNER_TOML
from heinzel.runners.settings import (
    ClaudeCodeSettings,
    CommandSettings,
    RunnerSettings,
    parse_runner_settings,
    parse_runners_table,
)

__all__ = [
    "INTERRUPTED_RESULT",
    "PI_RUNNER_TOML",
    "AgentResult",
    "AgentRunner",
    "ClaudeCodeRunner",
    "ClaudeCodeSettings",
    "CommandRunner",
    "CommandSettings",
    "HandoffBody",
    "HandoffOutcome",
    "HandoffRecord",
    "HandoffShare",
    "RunnerCheck",
    "RunnerError",
    "RunnerSettings",
    "Status",
    "Usage",
    "build_runner",
    "check_runner",
    "handoff_instruction",
    "handoff_share",
    "handoff_workdir",
    "interrupted_record",
    "parse_runner_settings",
    "parse_runners_table",
    "run_handoff",
    "tool_result_text",
]
