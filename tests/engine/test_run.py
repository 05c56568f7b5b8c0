"""The think step: checkpoints, the body round trip, resume, failure, caps, steering, stop."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from heinzel.engine import (
    Budget,
    HandoffRequest,
    Pricing,
    Saved,
    SpineView,
    ThinkResult,
    TurnServices,
    TurnSpec,
    build_context,
    think,
)
from heinzel.engine.testing import MemoryRecorder, body_hash

DONE = "every item of `merged_prs` is covered"


def outcome_args(version: int = 1) -> dict[str, Any]:
    return {
        "report": "drafted the section",
        "draft": {
            "text": "## section\n- Fix the checkout bug\n",
            "output": "section",
            "contract_version": version,
            "done_when": [{"item": DONE, "met": True, "note": "2 PRs"}],
        },
    }


@dataclass
class Script:
    """A FunctionModel script: tool-call steps, then the outcome; counts its requests."""

    steps: tuple[list[ToolCallPart], ...] = (
        [
            ToolCallPart("last_approved", {}, tool_call_id="c1"),
            ToolCallPart(
                "report",
                {"verb": "read", "target": "prs", "description": "read"},
                tool_call_id="c2",
            ),
        ],
    )
    final: Callable[[], dict[str, Any]] = outcome_args
    tokens: int = 1000
    requests: int = 0

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests += 1
        done = sum(isinstance(m, ModelResponse) for m in messages)
        usage = RequestUsage(input_tokens=self.tokens, output_tokens=10)
        if done < len(self.steps):
            return ModelResponse(parts=self.steps[done], usage=usage)
        call = ToolCallPart(info.output_tools[0].name, self.final(), tool_call_id=f"out{done}")
        return ModelResponse(parts=[call], usage=usage)

    def model(self) -> FunctionModel:
        return FunctionModel(self, model_name="function")


def go(
    turn: TurnSpec,
    script: Script,
    budget: Budget,
    recorder: MemoryRecorder | None = None,
    **kwargs: Any,
) -> tuple[ThinkResult, MemoryRecorder]:
    recorder = recorder or MemoryRecorder()
    context = build_context(turn, SpineView())
    result = asyncio.run(
        think(turn, context, model=script.model(), recorder=recorder, budget=budget, **kwargs)
    )
    return result, recorder


class TestCheckpoints:
    def test_one_line_per_request_carrying_its_tool_calls(self, spec: Any, budget: Any) -> None:
        """Two requests and two tool calls give two spine lines, the second naming the calls
        whose results it sent, with no content in them."""
        result, recorder = go(spec(), Script(), budget())
        assert result.status == "outcome" and result.disposition.disposition == "drafted"
        assert [k for k, _ in recorder.lines] == ["step.model", "step.model"]
        assert "tools" not in recorder.lines[0][1]
        assert [t["id"] for t in recorder.lines[1][1]["tools"]] == ["c1", "c2"]
        spine = json.dumps(recorder.lines)
        assert "checkout" not in spine and "section" not in spine

    def test_a_model_line_has_tokens_cost_and_body_hash(self, spec: Any, budget: Any) -> None:
        """step.model carries n, tokens in and out, the cost and the body record's hash."""
        _, recorder = go(spec(), Script(), budget())
        first = recorder.lines[0][1]
        assert (first["n"], first["in"], first["out"], first["usd"]) == (1, 1000, 10, "0.00101")
        assert first["body"] == body_hash(recorder.records[1]).removeprefix("sha256:")[:12]

    def test_the_conversation_round_trips_through_the_body(self, spec: Any, budget: Any) -> None:
        """Folding the body gives the same messages, usage and cost the run ended with."""
        result, recorder = go(spec(), Script(), budget())
        saved = Saved.fold(recorder.records)
        assert saved.conversation().messages == result.conversation.messages
        assert saved.usage == result.conversation.usage and saved.usd == result.usd


class TestResume:
    @pytest.mark.parametrize("cut", [1, 2, 3, 4])
    def test_a_resume_spends_no_recorded_request_again(
        self, spec: Any, budget: Any, cut: int
    ) -> None:
        """From any prefix of the body, the resume makes only the requests not yet recorded."""
        full, recorder = go(spec(), Script(), budget())
        prefix = recorder.records[:cut]
        recorded = sum(
            1
            for r in prefix
            if r["kind"] == "messages" and any(m["kind"] == "response" for m in r["messages"])
        )
        again = Script()
        resumed, _ = go(spec(), again, budget(), history_body=prefix)
        assert again.requests == 2 - recorded
        assert resumed.outcome == full.outcome
        assert resumed.conversation.usage.requests == 2
        assert resumed.usd == full.usd

    def test_an_interrupted_handoff_is_never_rerun(self, spec: Any, budget: Any) -> None:
        """A handoff started before a crash gets an interrupted result on resume."""
        calls: list[str] = []

        class Crash(BaseException):
            pass

        async def crashing(request: HandoffRequest) -> str:
            calls.append(request.task)
            raise Crash

        step = [ToolCallPart("handoff", {"task": "reconcile", "files": {}}, tool_call_id="h1")]
        recorder = MemoryRecorder()
        with pytest.raises((Crash, BaseExceptionGroup)):
            go(
                spec(),
                Script(steps=(step,)),
                budget(),
                recorder,
                services=TurnServices(runner=crashing),
            )
        assert [r["kind"] for r in recorder.records][-1] == "tool.started"
        resumed, after = go(
            spec(),
            Script(steps=(step,)),
            budget(),
            MemoryRecorder(),
            history_body=recorder.records,
            services=TurnServices(runner=crashing),
        )
        assert calls == ["reconcile"]
        assert resumed.interrupted == ("h1",) and resumed.status == "outcome"
        assert after.lines[0] == ("step.handoff", after.lines[0][1])
        assert after.lines[0][1]["ok"] == "interrupted"


class TestFailure:
    def test_an_outcome_at_the_wrong_version_fails(self, spec: Any, budget: Any) -> None:
        """An outcome that never validates fails the turn with the validation error."""
        result, _ = go(spec(), Script(final=lambda: outcome_args(version=9)), budget())
        assert result.status == "failed" and result.disposition.disposition == "failed"
        assert "contract_version must be 1" in (result.error or "")
        assert "contract_version must be 1" in (result.disposition.reason or "")

    def test_a_schema_violation_fails(self, spec: Any, budget: Any) -> None:
        """An outcome missing its report fails after the retries."""
        script = Script(steps=(), final=lambda: {"question": "why?"})
        result, _ = go(spec(), script, budget(), retries=1)
        assert result.status == "failed" and script.requests == 2


class TestCaps:
    def test_the_cap_stops_between_steps(self, spec: Any, budget: Any) -> None:
        """0.1 USD spent of 0.15 with the next step estimated at 0.1: stop before it."""
        script = Script(tokens=100_000)
        result, recorder = go(spec(), script, budget("0.15"))
        assert (result.status, result.disposition.reason, script.requests) == ("cap", "cap", 1)
        assert recorder.records[-1]["kind"] == "pending"

    def test_calls_no_request_sends_get_their_own_lines(self, spec: Any, budget: Any) -> None:
        """Stopped by the cap after the tool calls, no request carries them: each is a
        step.tool line of its own, so none goes unrecorded."""
        result, recorder = go(spec(), Script(tokens=100_000), budget("0.15"))
        assert result.status == "cap"
        assert [(k, d.get("id")) for k, d in recorder.lines] == [
            ("step.model", None),
            ("step.tool", "c1"),
            ("step.tool", "c2"),
        ]

    def test_the_day_cap_counts_too(self, spec: Any, budget: Any) -> None:
        """The day's spend of others leaves too little for a second step."""
        script = Script(tokens=100_000)
        result, _ = go(spec(), script, budget("1", day_usd="2", spent_today="1.85"))
        assert result.status == "cap" and script.requests == 1

    def test_the_token_ceiling_stops_inside_a_step(self, spec: Any, budget: Any) -> None:
        """One request using more tokens than the cap buys ends the run at the cap."""
        script = Script(tokens=200_000)
        result, recorder = go(spec(), script, budget("0.15"))
        assert result.status == "cap" and script.requests == 1
        assert result.usd == Decimal("0.20001")
        assert [k for k, _ in recorder.lines] == ["step.model"]

    def test_an_uncomputable_cost_counts_at_the_cap(self, spec: Any, budget: Any) -> None:
        """A request hz can't price counts as the whole cap, so no second step runs."""

        @dataclass(frozen=True)
        class Blind(Pricing):
            def cost(self, model: str, provider: str | None, usage: RequestUsage) -> Any:
                return None if usage.output_tokens == 10 else super().cost(model, provider, usage)

        base = budget("0.5")
        blind = Budget(Blind(at=base.pricing.at, overrides=base.pricing.overrides), Decimal("0.5"))
        script = Script()
        result, recorder = go(spec(), script, blind)
        assert result.status == "cap" and result.usd == Decimal("0.5")
        assert recorder.lines[0][1]["usd"] == "cap"

    def test_a_resume_keeps_counting(self, spec: Any, budget: Any) -> None:
        """What the body says was spent counts: a resume at the cap makes no request."""
        _, recorder = go(spec(), Script(tokens=100_000), budget("0.15"))
        again = Script(tokens=100_000)
        result, _ = go(spec(), again, budget("0.15"), history_body=recorder.records)
        assert result.status == "cap" and again.requests == 0


class TestSteeringAndStop:
    def test_a_steered_message_reaches_the_next_request(self, spec: Any, budget: Any) -> None:
        """A message handed in during the turn is in the second request and in the body."""
        queue = [[], ["keep it under ten lines"]]
        seen: list[list[str]] = []
        script = Script()

        def model_fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            seen.append(
                [
                    str(getattr(p, "content", ""))
                    for m in messages
                    for p in m.parts
                    if p.part_kind == "user-prompt"
                ]
            )
            return script(messages, info)

        recorder = MemoryRecorder()
        context = build_context(spec(), SpineView())
        result = asyncio.run(
            think(
                spec(),
                context,
                model=FunctionModel(model_fn, model_name="function"),
                recorder=recorder,
                budget=budget(),
                steering=lambda: queue.pop(0) if queue else [],
            )
        )
        assert result.status == "outcome"
        assert "keep it under ten lines" not in seen[0] and "keep it under ten lines" in seen[1]
        assert "keep it under ten lines" in json.dumps(recorder.records)

    def test_stop_cancels_and_keeps_the_snapshot(self, spec: Any, budget: Any) -> None:
        """Stop during a tool cancels the run; the body's last record is the snapshot."""

        async def scenario() -> tuple[ThinkResult, MemoryRecorder]:
            stop = asyncio.Event()
            never = asyncio.Event()

            async def slow(request: HandoffRequest) -> str:
                stop.set()
                await never.wait()
                return "unreachable"

            step = [ToolCallPart("handoff", {"task": "t", "files": {}}, tool_call_id="h1")]
            recorder = MemoryRecorder()
            result = await think(
                spec(),
                build_context(spec(), SpineView()),
                model=Script(steps=(step,)).model(),
                recorder=recorder,
                budget=budget(),
                services=TurnServices(runner=slow),
                stop=stop,
            )
            return result, recorder

        result, recorder = asyncio.run(scenario())
        assert result.status == "stopped" and result.disposition.reason == "stopped"
        assert recorder.records[-1]["kind"] == "conversation"
        snapshot = Saved.fold(recorder.records).conversation()
        assert snapshot.messages == result.conversation.messages

    def test_a_stop_never_set_changes_nothing(self, spec: Any, budget: Any) -> None:
        """A run given a stop event that is never set ends with its outcome."""

        result, _ = go(spec(), Script(), budget(), stop=asyncio.Event())
        assert result.status == "outcome"


class TestSpineHoldsNoContent:
    def test_no_text_and_no_address_in_any_line(self, spec: Any, budget: Any) -> None:
        """No checkpoint carries a text, draft or transcript field, or an email address."""
        from heinzel.engine import InputSpec, offline_model

        turn = spec(inputs=(InputSpec("merged_prs", '[{"title": "Fix by ann@example.com"}]'),))
        recorder = MemoryRecorder()
        asyncio.run(
            think(
                turn,
                build_context(turn, SpineView()),
                model=offline_model(),
                recorder=recorder,
                budget=budget(),
            )
        )
        spine = json.dumps(recorder.lines)
        assert "@" not in spine and "Fix by" not in spine
        assert not {"text", "draft", "transcript"} & {k for _, d in recorder.lines for k in d}


class TestAnyModel:
    def test_a_model_that_never_validates_fails(self, spec: Any, budget: Any) -> None:
        """TestModel's schema-shaped guesses never make a valid outcome: the turn fails."""
        from pydantic_ai.models.test import TestModel

        recorder = MemoryRecorder()
        result = asyncio.run(
            think(
                spec(),
                build_context(spec(), SpineView()),
                model=TestModel(call_tools=[]),
                recorder=recorder,
                budget=budget(),
                retries=1,
            )
        )
        assert result.status == "failed" and result.disposition.disposition == "failed"
        assert result.error
