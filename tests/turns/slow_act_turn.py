"""An asked turn in its own process whose act step starts past the timeout and which is
killed right after the document write: ``slow_act_turn.py HOME ID``.

The clock stands at ``NOW`` until the act step begins, then 11 minutes pass (a slow
model, a slow machine: on both parts of the clock, so they count as running time), so
``effect.started`` is recorded past the 10-minute timeout; the document adapter writes
the draft and the process exits 137 before ``effect.done``, the way a kill right after
the write leaves it.
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

import heinzel.turns.act as act
from heinzel.capabilities.documents import LocalDocuments
from heinzel.config import HeinzelSettings, Settings
from heinzel.service import Service
from heinzel.store.home import Home
from heinzel.turns import TurnHost, default_adapters
from machines import Wake, keys
from machines.crashkit.testing import ManualClock

pydantic_ai.models.ALLOW_MODEL_REQUESTS = False
NOW = datetime(2026, 10, 30, 14, 0, tzinfo=UTC)
DRAFT = {
    "text": "- ship the rounding fix\n- write the release notes\n",
    "output": "section",
    "contract_version": 1,
    "done_when": [{"item": "every item of `notes` is covered", "met": True}],
}
clock = ManualClock(NOW)
"""Its monotonic part moves with it: the 11 minutes pass, they are no jump of the clock."""


def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    out = {"report": "drafted", "draft": DRAFT}
    return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, out)])


class KilledAfterWrite(LocalDocuments):
    """Local documents whose ``place_draft`` writes the draft, then dies."""

    def place_draft(self, *args: Any, **kwargs: Any) -> Any:
        super().place_draft(*args, **kwargs)
        os._exit(137)


def main(home: Path, heinzel_id: str) -> None:
    settings = Settings(heinzel=HeinzelSettings(home=home))
    service = Service(Home(home), clock, settings, owner="me")
    place = act._place

    async def slow_place(*args: Any) -> None:
        clock.advance(minutes=11)
        await place(*args)

    act._place = slow_place  # type: ignore[assignment]
    host = TurnHost(service, model=FunctionModel(respond, model_name="offline"))
    adapters = default_adapters(settings)
    adapters["documents"] = KilledAfterWrite("me")
    wake = Wake("asked", keys.asked(heinzel_id, "rq-first"))
    host.run_wakes(heinzel_id, [wake], adapters=adapters)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
