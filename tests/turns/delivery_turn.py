"""An asked turn in its own process that waits where the test says:
``delivery_turn.py HOME ID SYNC think|act|start|draft``.

``think``: the model's first request writes ``SYNC/ready`` (a FIFO) and blocks on
``SYNC/go`` (a FIFO) before it answers with text, so the engine makes a second request.
``act``: the document's ``place_draft`` does the same. ``start``: the host waits there
holding the spine's lock, before the turn starts (its first model request does not
block). Every request's messages are recorded to ``SYNC/request-<n>.json``, so the
test sees what the model received. ``draft``: an asked turn of request ``rq-0000draft``
that waits nowhere (its draft's text is the same as every other turn's here).
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pydantic_ai.models
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from heinzel.capabilities.documents import LocalDocuments
from heinzel.config import HeinzelSettings, Settings
from heinzel.service import Service
from heinzel.store.home import Home
from heinzel.turns import TurnHost, default_adapters
from machines import Wake, keys

pydantic_ai.models.ALLOW_MODEL_REQUESTS = False
NOW = datetime(2026, 10, 30, 14, 0, tzinfo=UTC)
DRAFT = {
    "text": "- ship the rounding fix\n- write the release notes\n",
    "output": "section",
    "contract_version": 1,
    "done_when": [{"item": "every item of `notes` is covered", "met": True}],
}


def rendezvous(sync: Path) -> None:
    """Tell the test we are here, then wait until it says go."""
    with (sync / "ready").open("w") as ready:
        ready.write("here\n")
    with (sync / "go").open() as go:
        go.read()


def model(sync: Path, block: bool) -> FunctionModel:
    """Answers text first (blocking there when ``block``), then a draft."""
    count = [0]

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        count[0] += 1
        dumped = pydantic_ai.messages.ModelMessagesTypeAdapter.dump_json(messages)
        (sync / f"request-{count[0]}.json").write_bytes(dumped)
        if count[0] == 1:
            if block:
                rendezvous(sync)
            return ModelResponse(parts=[TextPart("let me think")])
        out = {"report": "drafted", "draft": DRAFT}
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, out)])

    return FunctionModel(respond, model_name="offline")


class BlockingDocuments(LocalDocuments):
    """Local documents whose first ``place_draft`` waits for the test."""

    def __init__(self, sync: Path) -> None:
        super().__init__("me")
        self.sync = sync
        self.blocked = False

    def place_draft(self, *args: Any, **kwargs: Any) -> Any:
        if not self.blocked:
            self.blocked = True
            rendezvous(self.sync)
        return super().place_draft(*args, **kwargs)


class StartingHost(TurnHost):
    """A host that meets the test once it holds the lock, before ``turn.started``."""

    sync: Path

    def _env(self, *args: Any, **kwargs: Any) -> Any:
        rendezvous(self.sync)
        return super()._env(*args, **kwargs)


def main(home: Path, heinzel_id: str, sync: Path, where: str) -> None:
    settings = Settings(heinzel=HeinzelSettings(home=home))
    service = Service(Home(home), lambda: NOW, settings, owner="me")
    host = TurnHost(service, model=model(sync, where == "think"))
    if where == "start":
        host = StartingHost(service, model=model(sync, False))
        host.sync = sync
    adapters = default_adapters(settings)
    if where == "act":
        adapters["documents"] = BlockingDocuments(sync)
    request = "rq-0000draft" if where == "draft" else "rq-first"
    wake = Wake("asked", keys.asked(heinzel_id, request))
    states = host.run_wakes(heinzel_id, [wake], adapters=adapters)
    print(json.dumps([[s.turn, s.state, s.disposition, s.reason] for s in states]))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), sys.argv[4])
