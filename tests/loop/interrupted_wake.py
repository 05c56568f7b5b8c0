"""`hz heinzel wake notes-digest` in its own process, its model blocking where the test says:
``interrupted_wake.py SYNC``.

The model's first request writes ``SYNC/ready`` (a FIFO) and blocks on ``SYNC/go`` (a
FIFO), so the test can send SIGINT while a model request is under way, as Ctrl-C would;
then it answers with text, so the engine would make a second request. Everything else is
the real command line (`heinzel.cli.main`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pydantic_ai.models
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from heinzel.cli import main
from heinzel.turns import host

pydantic_ai.models.ALLOW_MODEL_REQUESTS = False
DRAFT = {
    "text": "- ship the rounding fix\n",
    "output": "section",
    "contract_version": 1,
    "done_when": [{"item": "every item of `notes` is covered", "met": True}],
}


def blocking_model(sync: Path) -> FunctionModel:
    """Text after a rendezvous on the first request, a draft on the next."""
    count = [0]

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        count[0] += 1
        if count[0] == 1:
            with (sync / "ready").open("w") as ready:
                ready.write("here\n")
            with (sync / "go").open() as go:
                go.read()
            return ModelResponse(parts=[TextPart("let me think")])
        out = {"report": "drafted", "draft": DRAFT}
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, out)])

    return FunctionModel(respond)


if __name__ == "__main__":
    model = blocking_model(Path(sys.argv[1]))
    original = host.TurnHost.__init__

    def with_model(self: Any, service: Any, **kwargs: Any) -> None:
        original(self, service, **{**kwargs, "model": model})

    host.TurnHost.__init__ = with_model  # type: ignore[method-assign]
    sys.argv = ["hz", "heinzel", "wake", "notes-digest"]
    main()
