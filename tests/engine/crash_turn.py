"""A think step in its own process, for the kill tests: ``crash_turn.py DIR MODE KILL_AFTER``.

It resumes from ``DIR/body.jsonl`` when there is one, logs every model request to
``DIR/requests.log`` (fsynced, so the count survives the kill), and calls
``os._exit(137)`` right after the KILL_AFTER-th checkpoint is durable (0: never).
MODE ``draft``: two tool steps, then a draft. ``handoff``: one handoff call whose
runner logs to ``runner.log`` and, with KILL_AFTER -1, dies inside the runner.
``chat``: a write proposed for approval; ``answer``: the same turn, approved, whose
write logs to ``writes.log``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pydantic_ai.models
from pydantic_ai import FunctionToolset
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from heinzel.engine import (
    Answer,
    Budget,
    HandoffRequest,
    InputSpec,
    Price,
    Pricing,
    SpineView,
    TurnServices,
    TurnSpec,
    build_context,
    think,
)
from heinzel.engine.testing import FileRecorder

pydantic_ai.models.ALLOW_MODEL_REQUESTS = False
DONE = "every item of `merged_prs` is covered"
STEPS = [
    [
        ToolCallPart("last_approved", {}, tool_call_id="a1"),
        ToolCallPart(
            "report", {"verb": "read", "target": "prs", "description": "read"}, tool_call_id="a2"
        ),
    ],
    [ToolCallPart("previous_turns", {"n": 2}, tool_call_id="b1")],
]
MODE_STEPS = {
    "draft": STEPS,
    "handoff": [[ToolCallPart("handoff", {"task": "check", "files": {}}, tool_call_id="h1")]],
    "chat": [[ToolCallPart("post_message", {"text": "ship it"}, tool_call_id="w1")]],
}
MODE_STEPS["answer"] = MODE_STEPS["chat"]


def log_line(path: Path, text: str) -> None:
    """Append one fsynced line, so what happened survives a kill."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.write(fd, f"{text}\n".encode())
    os.fsync(fd)
    os.close(fd)


class Killing(FileRecorder):
    """A file recorder that dies right after its n-th durable checkpoint."""

    def __init__(self, directory: Path, kill_after: int) -> None:
        super().__init__(directory)
        self.kill_after = kill_after
        self.count = 0

    def checkpoint(self, kind: str, data: Mapping[str, Any]) -> None:
        super().checkpoint(kind, data)
        self.count += 1
        if self.count == self.kill_after:
            os._exit(137)


def main(directory: Path, mode: str, kill_after: int) -> None:
    steps = MODE_STEPS[mode]

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        done = sum(isinstance(m, ModelResponse) for m in messages)
        log_line(directory / "requests.log", str(done))
        usage = RequestUsage(input_tokens=1000, output_tokens=10)
        if done < len(steps):
            return ModelResponse(parts=steps[done], usage=usage)
        draft = {
            "text": "- PR\n",
            "output": "section",
            "contract_version": 1,
            "done_when": [{"item": DONE, "met": True}],
        }
        call = ToolCallPart(info.output_tools[0].name, {"report": "drafted", "draft": draft})
        return ModelResponse(parts=[call], usage=usage)

    at = datetime(2026, 10, 30, 15, tzinfo=UTC)
    spec = TurnSpec(
        turn="01JCRASH00000000000000000A",
        cause="schedule",
        contract_name="weekly-report",
        contract_version=1,
        body="### Done when\n",
        started_at=at,
        inputs=(InputSpec("merged_prs", "- PR"),),
        outputs=("section",),
        done_when=(DONE,),
    )
    recorder = Killing(directory, kill_after)
    prices = {"function": Price(Decimal(1), Decimal(1))}
    budget = Budget(Pricing(at=at, overrides=prices), Decimal("1"))

    async def runner(request: HandoffRequest) -> str:
        log_line(directory / "runner.log", request.task)
        if kill_after == -1:
            os._exit(137)
        return "checked"

    writes: FunctionToolset[None] = FunctionToolset()

    def post_message(text: str) -> str:
        """Post a message to the team channel."""
        log_line(directory / "writes.log", text)
        return "posted"

    writes.add_function(post_message, metadata={"replay_safe": False})
    result = asyncio.run(
        think(
            spec,
            build_context(spec, SpineView()),
            model=FunctionModel(respond, model_name="function"),
            recorder=recorder,
            budget=budget,
            history_body=recorder.read("body.jsonl"),
            services=TurnServices(runner=runner),
            write_tools=writes if mode in ("chat", "answer") else None,
            answers={"w1": Answer(approved=True)} if mode == "answer" else None,
        )
    )
    (directory / "result.json").write_text(
        json.dumps(
            {
                "status": result.status,
                "usd": str(result.usd),
                "requests": result.conversation.usage.requests,
            }
        )
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]))
