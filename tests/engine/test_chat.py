"""Chat turns: a proposed write pauses the run; the answer resumes the same Conversation."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic_ai import FunctionToolset
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from heinzel.engine import Answer, EngineError, SpineView, ThinkResult, build_context, think
from heinzel.engine.testing import MemoryRecorder

SECRET = "post 'ship it' to #checkout"


class Chat:
    """A model that proposes one write, then reports what came back as a question."""

    def __init__(self) -> None:
        self.requests = 0

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests += 1
        usage = RequestUsage(input_tokens=100, output_tokens=5)
        returns = [
            p
            for m in messages
            if isinstance(m, ModelRequest)
            for p in m.parts
            if getattr(p, "tool_name", None) == "post_message"
        ]
        if not returns:
            call = ToolCallPart("post_message", {"text": SECRET}, tool_call_id="w1")
            return ModelResponse(parts=[call], usage=usage)
        said = str(getattr(returns[-1], "content", ""))
        out = {"report": f"chat: {said}"[:200], "question": f"done: {said}"[:200]}
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, out)], usage=usage)


def writes(log: list[str]) -> FunctionToolset[None]:
    toolset: FunctionToolset[None] = FunctionToolset()

    def post_message(text: str) -> str:
        """Post a message to the team channel."""
        log.append(text)
        return "posted"

    toolset.add_function(post_message, metadata={"replay_safe": False})
    return toolset


def turn(
    spec: Any, budget: Any, chat: Chat, log: list[str], recorder: MemoryRecorder, **kwargs: Any
) -> ThinkResult:
    asked = spec(cause="asked", done_when=())
    return asyncio.run(
        think(
            asked,
            build_context(asked, SpineView()),
            model=FunctionModel(chat, model_name="function"),
            recorder=recorder,
            budget=budget(),
            write_tools=writes(log),
            **kwargs,
        )
    )


class TestChatTurn:
    def test_a_write_pauses_as_a_proposal(self, spec: Any, budget: Any) -> None:
        """The write does not run; the run ends deferred with one proposal."""
        log: list[str] = []
        recorder = MemoryRecorder()
        result = turn(spec, budget, Chat(), log, recorder)
        assert (result.status, result.disposition.disposition, log) == ("deferred", "asked", [])
        assert [(p.call_id, p.tool) for p in result.proposals] == [("w1", "post_message")]

    def test_the_spine_holds_the_id_and_hash_only(self, spec: Any, budget: Any) -> None:
        """question.asked carries the proposal's id, tool and hash, never its arguments."""
        recorder = MemoryRecorder()
        turn(spec, budget, Chat(), [], recorder)
        asked = [data for kind, data in recorder.lines if kind == "question.asked"]
        assert asked == [{"proposal": "w1", "tool": "post_message", "hash": asked[0]["hash"]}]
        assert asked[0]["hash"].startswith("sha256:")
        assert "ship it" not in json.dumps(recorder.lines)

    def test_an_approval_resumes_from_the_body(self, spec: Any, budget: Any) -> None:
        """After a 'crash', the body alone resumes the turn: the write runs once, no request
        is repeated."""
        log: list[str] = []
        first = MemoryRecorder()
        chat = Chat()
        turn(spec, budget, chat, log, first)
        later = Chat()
        later_recorder = MemoryRecorder()
        result = turn(
            spec,
            budget,
            later,
            log,
            later_recorder,
            history_body=first.records,
            answers={"w1": Answer(approved=True)},
        )
        assert result.status == "outcome" and log == [SECRET]
        assert (chat.requests, later.requests) == (1, 1)
        assert later_recorder.lines[0][0] == "step.model"  # it carries the write's result
        assert later_recorder.lines[0][1]["tools"][0]["safe"] is False
        assert result.outcome is not None and result.outcome.question == "done: posted"
        assert result.conversation.usage.requests == 2

    def test_a_denial_reaches_the_model(self, spec: Any, budget: Any) -> None:
        """A declined write never runs and the model sees the decline."""
        log: list[str] = []
        first = MemoryRecorder()
        turn(spec, budget, Chat(), log, first)
        result = turn(
            spec,
            budget,
            Chat(),
            log,
            MemoryRecorder(),
            history_body=first.records,
            answers={"w1": Answer(approved=False, message="not today")},
        )
        assert log == [] and result.outcome is not None
        assert result.outcome.question == "done: not today"

    def test_the_host_may_run_the_write_itself(self, spec: Any, budget: Any) -> None:
        """An answer carrying the host's result goes back as the tool's return, unrun here."""
        log: list[str] = []
        first = MemoryRecorder()
        turn(spec, budget, Chat(), log, first)
        result = turn(
            spec,
            budget,
            Chat(),
            log,
            MemoryRecorder(),
            history_body=first.records,
            answers={"w1": Answer(approved=True, result="posted by the kernel")},
        )
        assert log == [] and result.outcome is not None
        assert result.outcome.question == "done: posted by the kernel"

    def test_answers_must_match_the_proposals(self, spec: Any, budget: Any) -> None:
        """An answer for an unknown proposal is HZE007."""
        first = MemoryRecorder()
        turn(spec, budget, Chat(), [], first)
        with pytest.raises(EngineError) as caught:
            turn(
                spec,
                budget,
                Chat(),
                [],
                MemoryRecorder(),
                history_body=first.records,
                answers={"nope": Answer(approved=True)},
            )
        assert caught.value.code == "HZE007"
