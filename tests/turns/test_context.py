"""What a turn's model sees from hz: search tools over the adapters, the last approved text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from heinzel.config import HeinzelSettings, Settings
from heinzel.service import Service
from heinzel.store.home import Home
from heinzel.turns import TurnHost, Turns, default_adapters
from ledger.bodies import Bodies
from machines import Wake, keys

from .conftest import CONTRACT, NOW

PRIYA = Path(__file__).parent.parent.parent / "fixtures" / "priya"
DONE = "every item of `notes` is covered"


def searching(seen: list[str]) -> FunctionModel:
    """Searches the code host, then calls last_approved, then drafts."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        done = sum(isinstance(m, ModelResponse) for m in messages)
        seen.extend(
            str(p.content)
            for m in messages
            for p in getattr(m, "parts", ())
            if isinstance(p, ToolReturnPart)
        )
        if done == 0:
            args = {"method": "merged_pull_requests", "args": {"repo": "acme/checkout"}}
            return ModelResponse(parts=[ToolCallPart("search_code_host", args, tool_call_id="s1")])
        if done == 1:
            return ModelResponse(parts=[ToolCallPart("last_approved", {}, tool_call_id="l1")])
        draft = {
            "text": "- searched\n",
            "output": "section",
            "contract_version": 1,
            "done_when": [{"item": DONE, "met": True}],
        }
        call = ToolCallPart(info.output_tools[0].name, {"report": "drafted", "draft": draft})
        return ModelResponse(parts=[call])

    return FunctionModel(respond, model_name="offline")


class TestWhatTheModelSees:
    """The host's services to the engine's tools."""

    def test_search_and_last_approved(self, tmp_path: Path) -> None:
        """search_code_host reads the adapter; last_approved is the approved section."""
        (tmp_path / "notes.txt").write_text("one\n", encoding="utf-8")
        (tmp_path / "report.md").write_text("# Report\n", encoding="utf-8")
        text = CONTRACT.format(render="always", done_when=DONE).replace(
            "[files:read, documents:write]", "[files:read, code-host:read, documents:write]"
        )
        (tmp_path / "c.prose.md").write_text(text, encoding="utf-8")
        settings = Settings(heinzel=HeinzelSettings(home=tmp_path / "home"))
        service = Service(Home(tmp_path / "home"), lambda: NOW, settings, owner="me")
        heinzel_id = service.create_from_files([str(tmp_path / "c.prose.md")])[0]["id"]
        service.approve(heinzel_id)
        adapters: dict[str, Any] = default_adapters(settings, fixtures_dir=PRIYA)
        Turns(service).wake(heinzel_id, None, adapters=adapters)
        report = tmp_path / "report.md"
        report.write_text(
            "\n".join(line for line in report.read_text().split("\n") if "DRAFT" not in line)
        )
        draft = next(iter(service.index.db.query("SELECT key FROM drafts")))["key"]
        approval = Wake("approval", keys.approval(heinzel_id, "section", draft))
        Turns(service).run_wakes(heinzel_id, [approval], adapters=adapters)
        seen: list[str] = []
        host = TurnHost(service, model=searching(seen))
        wake = Wake("asked", keys.asked(heinzel_id, "r2"))
        (state,) = host.run_wakes(heinzel_id, [wake], adapters=adapters)
        assert state.disposition == "drafted", state
        assert any("Express checkout" in one for one in seen)
        assert any("- one" in one for one in seen)
        body = Bodies(service.home.session_dir(heinzel_id)).read(state.turn) or []
        assert "Express checkout" in json.dumps(body)

    def test_the_last_turns_bodies_are_in_the_context(self, make_service: Any) -> None:
        """The second turn's context shows the first turn's body."""
        service, heinzel_id, _ = make_service()
        adapters = default_adapters(service.settings)
        Turns(service).wake(heinzel_id, None, adapters=adapters)
        prompts: list[str] = []

        def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            prompts.extend(
                str(p.content)
                for m in messages
                for p in getattr(m, "parts", ())
                if p.part_kind == "user-prompt"
            )
            outcome = {"report": "nothing", "nothing_to_do": True, "reason": "seen it"}
            return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, outcome)])

        host = TurnHost(service, model=FunctionModel(respond, model_name="offline"))
        host.run_wakes(heinzel_id, [Wake("asked", keys.asked(heinzel_id, "r2"))], adapters=adapters)
        assert any("<turn-body" in prompt for prompt in prompts)
