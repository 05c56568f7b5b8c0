"""Parsing Claude Code's stream-json defensively, over the recorded fixtures and hostile input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from heinzel.runners.claude_stream import parse_stream

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "claude-code"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def result_line(**fields: object) -> str:
    base: dict[str, object] = {"type": "result", "subtype": "success", "is_error": False}
    base.update(fields)
    return json.dumps(base)


class TestFixtures:
    def test_success(self) -> None:
        """Report, model, tool calls by name, turns, usage from modelUsage, and cost."""
        summary = parse_stream(fixture("cc-stream-success.jsonl"))
        assert summary.status == "completed" and summary.reason is None
        assert summary.report.startswith("The project has README.md")
        assert summary.model == "claude-sonnet-4-5"
        assert summary.tool_calls == {"Read": 1, "Bash": 1}
        assert summary.turns == 3
        assert summary.cost_usd == pytest.approx(0.0541605)
        assert summary.usage.input_tokens > 0 and summary.usage.cache_write_tokens > 0

    def test_budget_stop(self) -> None:
        """error_max_budget_usd is status budget; usage comes from modelUsage, not usage."""
        summary = parse_stream(fixture("cc-stream-budget.jsonl"))
        assert (summary.status, summary.reason) == ("budget", "Reached maximum budget ($0.04)")
        assert summary.report == "" and summary.tool_calls == {"Read": 1}
        assert summary.usage.output_tokens == 98 and summary.usage.cache_write_tokens == 11234
        assert summary.cost_usd == pytest.approx(0.0436065)

    def test_max_turns_stop(self) -> None:
        """error_max_turns is a limit stop too, with the CLI's own words as the reason."""
        summary = parse_stream(fixture("cc-stream-maxturns.jsonl"))
        assert (summary.status, summary.reason) == ("budget", "Reached maximum number of turns (2)")
        assert summary.turns == 3


class TestDefensive:
    def test_is_error_is_read_before_subtype(self) -> None:
        """subtype success with is_error true (not logged in) is a failure with the CLI's text."""
        text = result_line(is_error=True, result="Not logged in · Please run /login")
        summary = parse_stream(text)
        assert (summary.status, summary.reason) == ("failed", "Not logged in · Please run /login")
        assert summary.report == ""

    def test_errors_list_on_an_error_subtype(self) -> None:
        """error_during_execution carries errors[] and no result field."""
        text = result_line(
            subtype="error_during_execution", is_error=True, errors=["No conversation found"]
        )
        assert parse_stream(text).reason == "No conversation found"

    def test_garbage_lines_and_unknown_keys_are_ignored(self) -> None:
        """Non-JSON, non-objects, unknown types and keys don't stop the parse."""
        lines = fixture("cc-stream-success.jsonl").splitlines()
        noisy = [
            "garbage \x00",
            "[1, 2]",
            '{"type": "stream_event", "new": true}',
            *lines[:-1],
            json.dumps({**json.loads(lines[-1]), "brand_new_key": {"x": 1}}),
        ]
        summary = parse_stream("\n".join(noisy))
        assert summary.status == "completed" and summary.skipped_lines == 2

    def test_no_result_event_is_failed(self) -> None:
        """A transcript cut before its result line is failed, keeping the tool calls seen."""
        lines = fixture("cc-stream-success.jsonl").splitlines()[:-1]
        summary = parse_stream("\n".join(lines))
        assert (summary.status, summary.has_result) == ("failed", False)
        assert summary.tool_calls == {"Read": 1, "Bash": 1}

    def test_fields_of_the_wrong_type_are_treated_as_absent(self) -> None:
        """num_turns as a string, cost as a bool, usage as a list: no crash, defaults."""
        text = result_line(result="ok", num_turns="3", total_cost_usd=True, usage=[1], modelUsage=5)
        summary = parse_stream(text)
        assert (summary.report, summary.turns, summary.cost_usd) == ("ok", 0, None)

    def test_a_tool_call_repeated_with_the_same_id_counts_once(self) -> None:
        """Per-block assistant lines may repeat a block; ids deduplicate."""
        block = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}}
        line = json.dumps({"type": "assistant", "message": {"id": "m", "content": [block]}})
        assert parse_stream(f"{line}\n{line}\n{result_line(result='x')}").tool_calls == {"Read": 1}

    def test_empty_input(self) -> None:
        """No output at all is a failed summary, not an exception."""
        assert parse_stream("").status == "failed"
