"""A think step in its own process, for the kill tests: ``crash_turn.py DIR KILL_AFTER``.

It resumes from ``DIR/body.jsonl`` when there is one, logs every model request to
``DIR/requests.log`` (fsynced, so the count survives the kill), and calls
``os._exit(137)`` right after the KILL_AFTER-th checkpoint is durable (0: never).
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
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from heinzel.engine import (
    Budget,
    InputSpec,
    Price,
    Pricing,
    SpineView,
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


def main(directory: Path, kill_after: int) -> None:
    log = directory / "requests.log"

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        done = sum(isinstance(m, ModelResponse) for m in messages)
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.write(fd, f"{done}\n".encode())
        os.fsync(fd)
        os.close(fd)
        usage = RequestUsage(input_tokens=1000, output_tokens=10)
        if done < len(STEPS):
            return ModelResponse(parts=STEPS[done], usage=usage)
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
    result = asyncio.run(
        think(
            spec,
            build_context(spec, SpineView()),
            model=FunctionModel(respond, model_name="function"),
            recorder=recorder,
            budget=budget,
            history_body=recorder.read("body.jsonl"),
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
    main(Path(sys.argv[1]), int(sys.argv[2]))
