"""Claude Code's ``--output-format stream-json`` read defensively into the parts of a result.

Facts from running the real CLI (docs/runners.md): one JSON object per line;
``system/init`` names the model; one ``assistant`` line per content block, with
tool calls as ``tool_use`` blocks; exactly one ``result`` line at the end.
``subtype: "success"`` does not mean success: ``is_error`` decides, and error
results carry ``errors[]`` and no ``result``. Usage comes from ``modelUsage``
(the result's ``usage`` is zero after a budget stop). Unknown keys and types
are ignored, and lines that are not JSON objects are skipped.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

from heinzel.runners.base import Status, Usage

__all__ = ["StreamSummary", "parse_stream"]

_LIMIT_SUBTYPES = {"error_max_budget_usd", "error_max_turns"}


@dataclass(frozen=True)
class StreamSummary:
    """What a stream-json transcript says, before the exit status is taken into account."""

    model: str | None
    tool_calls: dict[str, int]
    turns: int
    usage: Usage
    cost_usd: float | None
    has_result: bool
    status: Status
    report: str
    reason: str | None
    skipped_lines: int = 0


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _number(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _usage(result: dict[str, Any]) -> Usage:
    model_usage = result.get("modelUsage")
    if isinstance(model_usage, dict) and model_usage:
        per_model = [entry for entry in model_usage.values() if isinstance(entry, dict)]
        return Usage(
            input_tokens=sum(_int(entry.get("inputTokens")) for entry in per_model),
            output_tokens=sum(_int(entry.get("outputTokens")) for entry in per_model),
            cache_read_tokens=sum(_int(entry.get("cacheReadInputTokens")) for entry in per_model),
            cache_write_tokens=sum(
                _int(entry.get("cacheCreationInputTokens")) for entry in per_model
            ),
        )
    usage = result.get("usage")
    if not isinstance(usage, dict):
        return Usage()
    return Usage(
        input_tokens=_int(usage.get("input_tokens")),
        output_tokens=_int(usage.get("output_tokens")),
        cache_read_tokens=_int(usage.get("cache_read_input_tokens")),
        cache_write_tokens=_int(usage.get("cache_creation_input_tokens")),
    )


def _outcome(result: dict[str, Any]) -> tuple[Status, str | None]:
    """Status and reason from a result line: ``is_error`` first, then ``subtype``."""
    subtype = _text(result.get("subtype"))
    if result.get("is_error") is False and subtype == "success":
        return "completed", None
    errors = [item for item in result.get("errors") or [] if isinstance(item, str)]
    detail = "; ".join(errors) or _text(result.get("result")) or subtype or "error result"
    if subtype in _LIMIT_SUBTYPES:
        return "budget", detail
    return "failed", detail


def parse_stream(text: str) -> StreamSummary:
    """Summarise a stream-json transcript; never raises on hostile or partial input."""
    model: str | None = None
    tools: Counter[str] = Counter()
    seen_calls: set[str] = set()
    message_ids: set[str] = set()
    last_text = ""
    result: dict[str, Any] | None = None
    skipped = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError:
            skipped += 1
            continue
        if not isinstance(event, dict):
            skipped += 1
            continue
        kind = event.get("type")
        if (
            kind == "system"
            and event.get("subtype") == "init"
            and isinstance(event.get("model"), str)
        ):
            model = event["model"]
        elif kind == "assistant" and isinstance(event.get("message"), dict):
            message = event["message"]
            if isinstance(message.get("id"), str) and message.get("model") != "<synthetic>":
                message_ids.add(message["id"])
            for block in message.get("content") or []:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_use" and isinstance(block.get("name"), str):
                    call_id = _text(block.get("id")) or f"#{len(seen_calls)}"
                    if call_id not in seen_calls:
                        seen_calls.add(call_id)
                        tools[block["name"]] += 1
                elif block.get("type") == "text" and isinstance(block.get("text"), str):
                    last_text = block["text"]
        elif kind == "result":
            result = event
    if result is None:
        return StreamSummary(
            model=model,
            tool_calls=dict(tools),
            turns=len(message_ids),
            usage=Usage(),
            cost_usd=None,
            has_result=False,
            status="failed",
            report=last_text,
            reason="no result event in the output",
            skipped_lines=skipped,
        )
    status, reason = _outcome(result)
    model_usage = result.get("modelUsage")
    if model is None and isinstance(model_usage, dict) and model_usage:
        model = str(next(iter(model_usage)))
    num_turns = result.get("num_turns")
    return StreamSummary(
        model=model,
        tool_calls=dict(tools),
        turns=_int(num_turns) if num_turns is not None else len(message_ids),
        usage=_usage(result),
        cost_usd=_number(result.get("total_cost_usd")),
        has_result=True,
        status=status,
        report=_text(result.get("result")) if status == "completed" else "",
        reason=reason,
        skipped_lines=skipped,
    )
