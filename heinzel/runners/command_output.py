"""Reading what a command agent produced: plain text or one JSON object.

Output is hostile until read: it must be UTF-8 without NUL bytes, and a JSON
report must be an object with a string under the configured key (optional
``model``, ``tool_calls``, ``num_turns``, ``usage`` and ``total_cost_usd`` are
taken when well-formed and ignored otherwise). Every problem is a failed
parse with a reason, never an exception.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from heinzel.runners.base import Usage

__all__ = ["ParsedOutput", "decode_text", "parse_json_report", "parse_text_report"]


@dataclass(frozen=True)
class ParsedOutput:
    """The report and what else the output said; ``reason`` is set when it is unusable."""

    report: str = ""
    reason: str | None = None
    model: str | None = None
    tool_calls: dict[str, int] = field(default_factory=dict)
    turns: int = 0
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = None


def decode_text(data: bytes) -> tuple[str | None, str | None]:
    """(text, None) for UTF-8 without NUL bytes, else (None, why)."""
    if b"\x00" in data:
        return None, "the output is binary (it holds NUL bytes)"
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        return None, "the output is not UTF-8 text"


def parse_text_report(data: bytes) -> ParsedOutput:
    """The whole output, stripped, is the report."""
    text, problem = decode_text(data)
    if text is None:
        return ParsedOutput(reason=problem)
    if not text.strip():
        return ParsedOutput(reason="the output is empty")
    return ParsedOutput(report=text.strip())


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _usage(value: object) -> Usage:
    if not isinstance(value, dict):
        return Usage()
    return Usage(
        input_tokens=_count(value.get("input_tokens")),
        output_tokens=_count(value.get("output_tokens")),
        cache_read_tokens=_count(value.get("cache_read_tokens")),
        cache_write_tokens=_count(value.get("cache_write_tokens")),
    )


def parse_json_report(data: bytes, key: str) -> ParsedOutput:
    """One JSON object with the report as a string under ``key``."""
    text, problem = decode_text(data)
    if text is None:
        return ParsedOutput(reason=problem)
    try:
        obj: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        return ParsedOutput(reason=f"the output is not valid JSON ({exc.msg} at line {exc.lineno})")
    if not isinstance(obj, dict):
        return ParsedOutput(reason="the JSON output is not an object")
    report = obj.get(key)
    if not isinstance(report, str) or not report.strip():
        return ParsedOutput(reason=f"the JSON output has no non-empty string under {key!r}")
    calls = obj.get("tool_calls")
    cost = obj.get("total_cost_usd")
    return ParsedOutput(
        report=report.strip(),
        model=obj["model"] if isinstance(obj.get("model"), str) else None,
        tool_calls=(
            {name: _count(n) for name, n in calls.items() if isinstance(name, str)}
            if isinstance(calls, dict)
            else {}
        ),
        turns=_count(obj.get("num_turns")),
        usage=_usage(obj.get("usage")),
        cost_usd=float(cost)
        if isinstance(cost, int | float) and not isinstance(cost, bool)
        else None,
    )
