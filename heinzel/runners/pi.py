"""The pi coding agent through the command runner: its configuration and its output parser.

``pi --mode json`` prints one JSON event per line (a session header first) and
exits 0 even when the model call failed; failure shows only in its events, as
an assistant ``message_end`` whose ``stopReason`` is ``error`` or ``aborted``
(with ``errorMessage``), or an ``auto_retry_end`` with ``success: false``. pi
has no turn limit, no budget flag and no permission system: its read-only
profile is the tool allowlist (``--tools read,grep,find,ls``), which is why the
user must state ``command_enforces_read_only`` themselves.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from heinzel.runners.base import Usage
from heinzel.runners.command_output import ParsedOutput, decode_text

__all__ = ["PI_RUNNER_TOML", "parse_pi_events"]

PI_RUNNER_TOML = """\
[runners.pi]
kind = "command"
command = [
  "pi", "--mode", "json",
  "--no-session", "--no-extensions", "--no-skills", "--no-prompt-templates",
  "--no-themes", "--no-context-files", "--offline",
  "--tools", "{tools}",
  "--append-system-prompt", "{contract_file}",
  "--model", "{model}",
]
model = "anthropic/claude-sonnet-4-5"
tools = ["read", "grep", "find", "ls"]
command_enforces_read_only = true
command_env = ["ANTHROPIC_API_KEY"]
prompt_on_stdin = true
output = "stdout"
output_format = "pi-json"
"""
"""The documented pi runner (docs/runners.md shows the same text; a test runs it)."""


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _events(text: str) -> list[dict[str, Any]]:
    events = []
    for line in text.split("\n"):
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def _assistant_text(message: dict[str, Any]) -> str:
    blocks = message.get("content")
    if not isinstance(blocks, list):
        return ""
    return "".join(
        block["text"]
        for block in blocks
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    )


def parse_pi_events(data: bytes) -> ParsedOutput:
    """Summarise pi's ``--mode json`` events; a failure hidden behind exit 0 becomes a reason."""
    text, problem = decode_text(data)
    if text is None:
        return ParsedOutput(reason=problem)
    calls: Counter[str] = Counter()
    seen: set[str] = set()
    usage = Counter[str]()
    cost = 0.0
    last: dict[str, Any] | None = None
    turns = 0
    ended = retry_pending = False
    retry_error: str | None = None
    for event in _events(text):
        kind = event.get("type")
        message = event.get("message")
        if (
            kind == "message_end"
            and isinstance(message, dict)
            and message.get("role") == "assistant"
        ):
            last, turns = message, turns + 1
            raw: dict[str, Any] = message["usage"] if isinstance(message.get("usage"), dict) else {}
            for key in ("input", "output", "cacheRead", "cacheWrite"):
                usage[key] += _count(raw.get(key))
            total = raw.get("cost", {}).get("total") if isinstance(raw.get("cost"), dict) else None
            if isinstance(total, int | float) and not isinstance(total, bool):
                cost += float(total)
        elif kind == "tool_execution_start" and isinstance(event.get("toolName"), str):
            call_id = str(event.get("toolCallId") or f"#{len(seen)}")
            if call_id not in seen:
                seen.add(call_id)
                calls[event["toolName"]] += 1
        elif kind == "agent_end":
            ended, retry_pending = True, False
        elif kind == "auto_retry_start":
            retry_pending = True
        elif kind == "auto_retry_end":
            retry_pending = False
            if event.get("success") is False:
                retry_error = str(event.get("finalError") or "the retries failed")
    common: dict[str, Any] = {
        "model": last.get("model") if last and isinstance(last.get("model"), str) else None,
        "tool_calls": dict(calls),
        "turns": turns,
        "usage": Usage(
            input_tokens=usage["input"],
            output_tokens=usage["output"],
            cache_read_tokens=usage["cacheRead"],
            cache_write_tokens=usage["cacheWrite"],
        ),
        "cost_usd": cost if turns else None,
    }
    if last is None:
        return ParsedOutput(reason="pi produced no assistant message", **common)
    stop = last.get("stopReason")
    if stop in ("error", "aborted"):
        why = last.get("errorMessage") or retry_error or f"stopReason {stop}"
        return ParsedOutput(reason=f"pi's model call failed: {why}", **common)
    if retry_error is not None or retry_pending or not ended:
        why = retry_error or "its run did not end (no agent_end)"
        return ParsedOutput(reason=f"pi did not finish: {why}", **common)
    if stop == "length":
        return ParsedOutput(reason="pi's model hit its output limit", **common)
    report = _assistant_text(last).strip()
    if not report:
        return ParsedOutput(reason="pi's last message holds no text", **common)
    return ParsedOutput(report=report, **common)
