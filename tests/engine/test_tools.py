"""The generated tools: names, replay safety, read-only, cleaning, validation retries."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from heinzel.engine import (
    EngineError,
    HandoffRequest,
    InputSpec,
    ReadMethod,
    SpineRecord,
    SpineView,
    TurnServices,
    TurnSpec,
    build_toolset,
)
from heinzel.engine.tools import replay_safety


@dataclass
class Tracker:
    """A fake read capability with one read method, one write method, one without a window."""

    name: str = "tracker"
    calls: list[tuple[str, dict[str, str], str]] = field(default_factory=list)

    @property
    def methods(self) -> Sequence[ReadMethod]:
        return [
            ReadMethod("issues_updated", "issues changed in the window"),
            ReadMethod("close_issue", "closes an issue", mode="write"),
            ReadMethod("issue", "one issue by id", takes_window=False),
        ]

    async def search(self, method: str, args: Mapping[str, str], window: str) -> Any:
        self.calls.append((method, dict(args), window))
        return [{"title": "CHK-1\x07 by bob@example.org"}]


def returns(messages: list[ModelMessage]) -> list[Any]:
    return [
        (p.part_kind, getattr(p, "tool_name", None), getattr(p, "content", None))
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if p.part_kind in ("tool-return", "retry-prompt")
    ]


def scripted(*steps: list[ToolCallPart]) -> FunctionModel:
    """A model that sends each step's calls in turn, then ends with text."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        done = sum(isinstance(m, ModelResponse) for m in messages)
        if done < len(steps):
            return ModelResponse(parts=steps[done])
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(respond, model_name="function")


class TestGeneratedTools:
    def test_names_follow_the_spec(self, spec: Callable[..., TurnSpec]) -> None:
        """One read per input, one search per capability with read methods, the fixed four."""
        toolset = build_toolset(spec(), TurnServices(capabilities=[Tracker()]))
        assert sorted(toolset.tools) == [
            "last_approved",
            "lessons",
            "previous_turns",
            "read_events",
            "read_issues",
            "read_merged_prs",
            "report",
            "search_tracker",
        ]

    def test_every_tool_declares_replay_safety(self, spec: Callable[..., TurnSpec]) -> None:
        """Every tool carries replay_safe; only handoff is unsafe."""

        async def runner(request: HandoffRequest) -> str:
            return "report"

        toolset = build_toolset(spec(), TurnServices(runner=runner))
        assert all("replay_safe" in (t.metadata or {}) for t in toolset.tools.values())
        assert {n for n, safe in replay_safety(toolset).items() if not safe} == {"handoff"}

    def test_handoff_is_absent_without_a_runner(self, spec: Callable[..., TurnSpec]) -> None:
        """No runner bound, no handoff tool."""
        assert "handoff" not in build_toolset(spec(), TurnServices()).tools

    def test_a_write_method_is_never_exposed(self, spec: Callable[..., TurnSpec]) -> None:
        """The search tool's description names the read method and never the write one."""
        tool = build_toolset(spec(), TurnServices(capabilities=[Tracker()])).tools["search_tracker"]
        assert "issues_updated" in (tool.description or "")
        assert "close_issue" not in (tool.description or "")

    def test_clashing_names_are_a_coded_error(self, spec: Callable[..., TurnSpec]) -> None:
        """Two inputs that give one tool name are HZE009."""
        turn = spec(inputs=(InputSpec("a-b", "x"), InputSpec("a_b", "y")))
        with pytest.raises(EngineError) as caught:
            build_toolset(turn, TurnServices())
        assert caught.value.code == "HZE009"

    def test_a_nameless_input_is_a_coded_error(self, spec: Callable[..., TurnSpec]) -> None:
        """An input whose name has no usable character is HZE009."""
        with pytest.raises(EngineError, match="gives no tool name"):
            build_toolset(spec(inputs=(InputSpec("---", "x"),)), TurnServices())


class TestToolCalls:
    def run(self, turn: TurnSpec, services: TurnServices, *steps: list[ToolCallPart]) -> list[Any]:
        agent = Agent(
            scripted(*steps),
            toolsets=[build_toolset(turn, services)],
            retries={"tools": 2, "output": 1},
        )
        result = asyncio.run(agent.run("go"))
        return returns(result.all_messages())

    def test_results_are_cleaned_and_redacted(self, spec: Callable[..., TurnSpec]) -> None:
        """Control characters are stripped and addresses redacted in search and read results."""
        turn = spec(inputs=(InputSpec("notes", "ping carol@example.com\x1b[31m"),))
        tracker = Tracker()
        got = self.run(
            turn,
            TurnServices(capabilities=[tracker]),
            [
                ToolCallPart("search_tracker", {"method": "issues_updated", "window": "7d"}),
                ToolCallPart("read_notes", {}),
            ],
        )
        assert got[0][2] == [{"title": "CHK-1 by [email]"}]
        assert got[1][2] == "ping [email][31m"
        assert tracker.calls == [("issues_updated", {}, "7d")]

    def test_a_bad_argument_is_a_retry(self, spec: Callable[..., TurnSpec]) -> None:
        """previous_turns(n="many") comes back as a retry; the corrected call then runs."""
        view = SpineView((SpineRecord(1, "T1", "turn.started", {"cause": "schedule"}),))
        got = self.run(
            spec(),
            TurnServices(view=view),
            [ToolCallPart("previous_turns", {"n": "many"})],
            [ToolCallPart("previous_turns", {"n": 1})],
        )
        assert got[0][2][0]["type"] == "int_parsing"
        assert got[-1] == (
            "tool-return",
            "previous_turns",
            ["#1 turn.started turn=T1 cause=schedule"],
        )

    def test_previous_turns_hide_what_the_user_hid(self, spec: Callable[..., TurnSpec]) -> None:
        """previous_turns never shows a dismissed lesson or a line hidden by context.edit."""
        view = SpineView(
            (
                SpineRecord(1, "T1", "turn.started", {"cause": "asked"}),
                SpineRecord(2, "T1", "lesson.recorded", {"id": "L1", "sentence": "secret"}),
                SpineRecord(3, "T1", "question.asked", {"question": "hidden?"}),
                SpineRecord(4, "T1", "turn.finished", {"disposition": "learned"}),
                SpineRecord(5, None, "lesson.dismissed", {"id": "L1"}),
                SpineRecord(6, None, "context.edit", {"target": "seq:3", "replacement": None}),
            )
        )
        got = self.run(spec(), TurnServices(view=view), [ToolCallPart("previous_turns", {"n": 1})])
        assert got[0][2] == [
            "#1 turn.started turn=T1 cause=asked",
            "#4 turn.finished turn=T1 disposition=learned",
        ]

    def test_an_unknown_method_is_a_retry(self, spec: Callable[..., TurnSpec]) -> None:
        """A write method asked of search is refused as a retry, never run."""
        tracker = Tracker()
        got = self.run(
            spec(),
            TurnServices(capabilities=[tracker]),
            [
                ToolCallPart("search_tracker", {"method": "close_issue", "window": "7d"}),
            ],
        )
        assert "method must be one of ['issues_updated']" in str(got[0][2])
        assert tracker.calls == []

    def test_a_bad_window_is_a_retry(self, spec: Callable[..., TurnSpec]) -> None:
        """A window that is not like 7d is a validation retry."""
        tracker = Tracker()
        got = self.run(
            spec(),
            TurnServices(capabilities=[tracker]),
            [
                ToolCallPart("search_tracker", {"method": "issues_updated", "window": "forever"}),
            ],
        )
        assert got[0][2][0]["type"] == "string_pattern_mismatch"
        assert tracker.calls == []

    def test_report_keeps_one_entry_per_call(self, spec: Callable[..., TurnSpec]) -> None:
        """report() records verb, target and a redacted description under its call id."""
        services = TurnServices()
        self.run(
            spec(),
            services,
            [
                ToolCallPart(
                    "report",
                    {"verb": "read", "target": "tracker", "description": "asked dan@x.io"},
                    tool_call_id="r1",
                )
            ],
        )
        assert [(r.call_id, r.verb, r.description) for r in services.reports.values()] == [
            ("r1", "read", "asked [email]")
        ]

    def test_handoff_gets_its_share(self, spec: Callable[..., TurnSpec]) -> None:
        """handoff passes the task, the files and its share of what is left of the cap."""
        seen: list[HandoffRequest] = []

        async def runner(request: HandoffRequest) -> str:
            seen.append(request)
            return "reconciled; mail eve@example.com"

        services = TurnServices(runner=runner, remaining_usd=lambda: Decimal("0.4"))
        got = self.run(
            spec(),
            services,
            [
                ToolCallPart(
                    "handoff", {"task": "reconcile", "files": {"a.md": "x"}, "budget_share": 0.25}
                )
            ],
        )
        assert got[0][2] == "reconciled; mail [email]"
        assert (seen[0].task, dict(seen[0].files), seen[0].budget_usd) == (
            "reconcile",
            {"a.md": "x"},
            Decimal("0.1000"),
        )
