"""A turn with a handoff in its own process: ``handoff_turn.py HOME ID run|resume [TURN]``.

The runner logs each run to ``HOME/runner.log`` (fsynced) and, in ``run``, kills the
process inside the handoff (``os._exit(137)``), as a crash would.
"""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pydantic_ai.models
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from heinzel.config import HeinzelSettings, Settings
from heinzel.runners.base import AgentResult
from heinzel.service import Service
from heinzel.store.home import Home
from heinzel.turns import TurnHost, default_adapters
from machines import Wake, keys

pydantic_ai.models.ALLOW_MODEL_REQUESTS = False
DONE = "every item of `notes` is covered"
NOW = datetime(2026, 10, 30, 14, 0, tzinfo=UTC)


def scripted_model() -> FunctionModel:
    """Calls handoff once, then drafts."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        done = sum(isinstance(m, ModelResponse) for m in messages)
        if done == 0:
            args = {"task": "check the notes", "files": {}}
            return ModelResponse(parts=[ToolCallPart("handoff", args, tool_call_id="h1")])
        draft = {
            "text": "- checked\n",
            "output": "section",
            "contract_version": 1,
            "done_when": [{"item": DONE, "met": True}],
        }
        call = ToolCallPart(info.output_tools[0].name, {"report": "drafted", "draft": draft})
        return ModelResponse(parts=[call])

    return FunctionModel(respond, model_name="offline")


class Dying:
    """A runner that logs its run and dies inside it."""

    def __init__(self, log: Path) -> None:
        self.log = log

    def run(self, task: str, **_: Any) -> AgentResult:
        fd = os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.write(fd, f"{task}\n".encode())
        os.fsync(fd)
        os.close(fd)
        os._exit(137)


def main(home: Path, heinzel_id: str, mode: str, turn: str = "") -> None:
    settings = Settings(heinzel=HeinzelSettings(home=home))
    service = Service(Home(home), lambda: NOW, settings, owner="me")
    host = TurnHost(service, model=scripted_model(), runner=("fake", Dying(home / "runner.log")))  # type: ignore[arg-type]
    adapters = default_adapters(settings)
    if mode == "run":
        host.run_wakes(heinzel_id, [Wake("asked", keys.asked(heinzel_id, "r1"))], adapters=adapters)
    else:
        state = host.resume_turn(heinzel_id, turn, "recovery", adapters=adapters)
        print(state.disposition if state else "none")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], sys.argv[3], *sys.argv[4:])
