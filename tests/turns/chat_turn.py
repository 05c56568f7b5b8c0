"""A chat turn in its own process: ``chat_turn.py HOME ID run|resume|answer [TURN|yes|no]``.

The model proposes ``pause`` once, then drafts with what the pause returned in its
report. ``HZ_CRASH_AT`` kills the process where the test says.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

import pydantic_ai.models
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from heinzel.config import HeinzelSettings, Settings
from heinzel.service import Service
from heinzel.store.home import Home
from heinzel.turns import TurnHost, default_adapters
from heinzel.turns.answer import answer
from machines import Wake, keys

pydantic_ai.models.ALLOW_MODEL_REQUESTS = False
DONE = "every item of `notes` is covered"
NOW = datetime(2026, 10, 30, 14, 0, tzinfo=UTC)
REASON = "the notes moved to another repository"


def chat_model(seen: list[str] | None = None, *, both: bool = False) -> FunctionModel:
    """Proposes pause once (``both``: pause and retire), then drafts, reporting what the
    pause returned; ``seen`` gets the tool names of each request."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = [
            p
            for m in messages
            if isinstance(m, ModelRequest)
            for p in m.parts
            if getattr(p, "tool_name", None) == "pause"
        ]
        if seen is not None:
            seen.append(",".join(t.name for t in info.function_tools))
        if not returns:
            calls = [ToolCallPart("pause", {"reason": REASON}, tool_call_id="w1")]
            if both:
                calls.append(ToolCallPart("retire", {"reason": REASON}, tool_call_id="w2"))
            return ModelResponse(parts=list(calls))
        said = str(getattr(returns[-1], "content", ""))
        draft = {
            "text": "- ship the rounding fix\n- write the release notes\n",
            "output": "section",
            "contract_version": 1,
            "done_when": [{"item": DONE, "met": True}],
        }
        out = {"report": f"pause: {said}"[:200], "draft": draft}
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, out)])

    return FunctionModel(respond, model_name="offline")


def main(home: Path, heinzel_id: str, mode: str, arg: str = "") -> None:
    settings = Settings(heinzel=HeinzelSettings(home=home))
    service = Service(Home(home), lambda: NOW, settings, owner="me")
    host = TurnHost(service, model=chat_model())
    adapters = default_adapters(settings)
    if mode == "run":
        wake = Wake("asked", keys.asked(heinzel_id, "r1"))
        states = host.run_wakes(heinzel_id, [wake], adapters=adapters)
        print(states[-1].state)
    elif mode == "resume":
        state = host.resume_turn(heinzel_id, arg, "recovery", adapters=adapters)
        print(state.state if state else "none")
    else:
        print(answer(host, heinzel_id, arg == "yes", None, adapters=adapters)["state"])


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], sys.argv[3], *sys.argv[4:])
