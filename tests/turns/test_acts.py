"""The act step's other acts: a question and its answer, an amendment, a summary."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from heinzel.turns import TurnHost, default_adapters
from ledger.spine import read_events
from machines import Wake, keys


def answering(outcome: dict[str, Any]) -> FunctionModel:
    """A model that returns ``outcome`` at once."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, outcome)])

    return FunctionModel(respond, model_name="offline")


def _run(make_service: Callable[..., Any], outcome: dict[str, Any]) -> tuple[Any, str, Any]:
    service, heinzel_id, _ = make_service()
    host = TurnHost(service, model=answering(outcome))
    wake = Wake("asked", keys.asked(heinzel_id, "r1"))
    (state,) = host.run_wakes(heinzel_id, [wake], adapters=default_adapters(service.settings))
    return host, heinzel_id, state


def _kinds(host: TurnHost, heinzel_id: str) -> list[Any]:
    return list(read_events(host.service.home.spine_path(heinzel_id)))


class TestActs:
    """What act does for each kind of outcome."""

    def test_a_question_waits_for_its_answer(self, make_service: Callable[..., Any]) -> None:
        """question.asked once, the turn waits on the answer, and the answer finishes it."""
        host, heinzel_id, state = _run(
            make_service, {"report": "need a date", "question": "Which week is this for?"}
        )
        assert state.state == "waiting"
        asked = [e for e in _kinds(host, heinzel_id) if e.kind == "question.asked"]
        assert len(asked) == 1 and state.wait["on"] == {"kind": "answer", "key": asked[0].key}
        done = host.resume_turn(
            heinzel_id, state.turn, "answer", adapters=default_adapters(host.service.settings)
        )
        assert done is not None and done.disposition == "asked"
        assert len([e for e in _kinds(host, heinzel_id) if e.kind == "question.asked"]) == 1

    def test_a_widening_amendment_is_refused_and_recorded(
        self, make_service: Callable[..., Any]
    ) -> None:
        """HZC050 for the model's widening: amendment.refused, and the turn goes on."""
        service, heinzel_id, folder = make_service()
        text = (folder / "digest.prose.md").read_text(encoding="utf-8")
        wider = text.replace(
            "[files:read, documents:write]", "[files:read, git:read, documents:write]"
        )
        host = TurnHost(
            service,
            model=answering({"report": "wider", "amendment": {"text": wider, "why": "more"}}),
        )
        wake = Wake("asked", keys.asked(heinzel_id, "r1"))
        (state,) = host.run_wakes(heinzel_id, [wake], adapters=default_adapters(service.settings))
        assert state.disposition == "proposed"
        refused = [e for e in _kinds(host, heinzel_id) if e.kind == "amendment.refused"]
        assert [e.data["code"] for e in refused] == ["HZC050"]
        assert service.queries.pending_amendment(heinzel_id) is None

    def test_a_narrowing_amendment_is_filed(self, make_service: Callable[..., Any]) -> None:
        """A proposal that does not widen is filed with the service, pending approval."""
        service, heinzel_id, folder = make_service()
        text = (folder / "digest.prose.md").read_text(encoding="utf-8")
        narrower = text.replace("A short digest", "A very short digest")
        host = TurnHost(
            service,
            model=answering({"report": "tighter", "amendment": {"text": narrower, "why": "short"}}),
        )
        wake = Wake("asked", keys.asked(heinzel_id, "r1"))
        (state,) = host.run_wakes(heinzel_id, [wake], adapters=default_adapters(service.settings))
        assert state.disposition == "proposed"
        assert service.queries.pending_amendment(heinzel_id)["by"] == "heinzel"

    def test_a_summary_keeps_its_fixed_fields(self, make_service: Callable[..., Any]) -> None:
        """A summary-only turn ends skipped, and summary.written has the fixed fields."""
        summary = {"asset": "file:report.md", "wants": "weekly digests", "decisions": ["short"]}
        host, heinzel_id, state = _run(make_service, {"report": "summed up", "summary": summary})
        written = [e for e in _kinds(host, heinzel_id) if e.kind == "summary.written"]
        assert state.state == "skipped"
        assert written[0].data["wants"] == "weekly digests"
