"""A turn's view of the past read from the index and the spine's tail is the whole spine's."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

import heinzel.turns.view as view_module
from heinzel.engine import SpineRecord, SpineView, TurnServices, TurnSpec, build_toolset
from heinzel.engine.context import ContextSettings, build_context
from heinzel.turns import TurnHost, default_adapters
from heinzel.turns.view import TOOL_TURNS, spine_view
from heinzel.vocabulary import HOST_HIDDEN
from ledger.event import Event
from ledger.spine import read_events
from machines import Wake, keys
from machines.stores.journal import expand_carried
from tests.turns.test_acts import answering

SPEC = TurnSpec(
    turn="tn-now",
    cause="asked",
    contract_name="digest",
    contract_version=1,
    body="### Goal\n\nA digest.\n",
    started_at=datetime(2026, 11, 2, 9, tzinfo=UTC),
)


def _whole(path: Any) -> SpineView:
    return SpineView(
        tuple(
            SpineRecord(e.seq, e.turn, e.kind, e.data)
            for e in expand_carried(read_events(path))
            if e.kind not in HOST_HIDDEN
        )
    )


NOTHING = {"report": "nothing to add", "nothing_to_do": True, "reason": "no news"}
SUMMARY = {"asset": "file:report.md", "wants": "weekly digests", "decisions": ["short"]}


def _aged(service: Any, heinzel_id: str, turns: int, first: int = 0) -> None:
    """Run ``turns`` turns, every tenth writing a summary chained to the one before."""
    plain = TurnHost(service, model=answering(NOTHING))
    adapters = default_adapters(service.settings)
    path = service.home.spine_path(heinzel_id)
    for n in range(first, first + turns):
        host = plain
        if n % 10 == 9:
            seqs = [e.seq for e in read_events(path) if e.kind == "summary.written"]
            summary = {**SUMMARY, "previous": seqs[-1] if seqs else None}
            host = TurnHost(service, model=answering({"report": "summed", "summary": summary}))
        wake = Wake("asked", keys.asked(heinzel_id, f"r{n}"))
        host.run_wakes(heinzel_id, [wake], adapters=adapters)
    assert [e.turn for e in read_events(path) if e.kind == "summary.written"][-1]


def _previous_turns(view: SpineView, n: int) -> Any:
    """What the ``previous_turns`` tool returns over ``view``."""
    tool = build_toolset(SPEC, TurnServices(view=view)).tools["previous_turns"]
    return tool.function(n=n)  # type: ignore[call-arg]


def test_the_tail_view_builds_the_same_context_as_the_whole_spine(
    make_service: Callable[..., Any],
) -> None:
    """After 30 turns with summaries and an early context edit, the view from the index
    and the tail reads fewer lines and gives the context and the tool's turns unchanged."""
    service, heinzel_id, _ = make_service()
    service.append(heinzel_id, "context.edit", {"target": "turn:early", "replacement": None})
    _aged(service, heinzel_id, 30)
    path = service.home.spine_path(heinzel_id)
    whole = _whole(path)
    for keep in (0, 2, 5):
        tail = spine_view(service.index.db, heinzel_id, path, keep)
        settings = ContextSettings(summary_keep_turns=keep)
        assert len(tail.records) < len(whole.records)
        assert any(r.kind == "context.edit" for r in tail.records)
        ours = build_context(SPEC, tail, settings=settings)
        theirs = build_context(SPEC, whole, settings=settings)
        assert (ours.instructions, ours.messages) == (theirs.instructions, theirs.messages)
        assert tail.earlier is not None
        more = tail.earlier(TOOL_TURNS)
        started = [r.turn for r in whole.records if r.kind == "turn.started"][-TOOL_TURNS:]
        assert [r.turn for r in more.records if r.kind == "turn.started"][-TOOL_TURNS:] == started
        for n in (1, 7, TOOL_TURNS):
            assert _previous_turns(tail, n) == _previous_turns(whole, n)


def test_a_session_without_a_summary_reads_the_whole_spine(
    make_service: Callable[..., Any],
) -> None:
    """With no summary yet the view is every line the host shows."""
    service, heinzel_id, _ = make_service()
    host = TurnHost(service, model=answering({"report": "nothing to add"}))
    host.run_wakes(
        heinzel_id,
        [Wake("asked", keys.asked(heinzel_id, "r1"))],
        adapters=default_adapters(service.settings),
    )
    path = service.home.spine_path(heinzel_id)
    assert spine_view(service.index.db, heinzel_id, path, 5) == _whole(path)


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the spine lines the view module parses (its one way to read the spine)."""
    parsed = [0]

    def counted(*args: Any, **kwargs: Any) -> Iterator[Event]:
        for event in read_events(*args, **kwargs):
            parsed[0] += 1
            yield event

    monkeypatch.setattr(view_module, "read_events", counted)
    return parsed


def _context_lines(path: Any, keep: int) -> int:
    """The lines the context of the next turn needs: from the first line of the ``keep``
    turns before the last summary (or the summary) to the end, and the early marks."""
    events = list(read_events(path))
    summary = max(e.seq for e in events if e.kind == "summary.written")
    kept = [e.turn for e in events if e.kind == "turn.started" and e.seq < summary][-keep:]
    first = min([summary, *(e.seq for e in events if e.turn in kept)])
    marks = ("context.edit", "lesson.recorded", "lesson.dismissed")
    early = sum(1 for e in events if e.seq < first and e.kind in marks)
    return sum(1 for e in events if e.seq >= first) + early


def test_a_turn_start_reads_what_its_context_needs_whatever_the_age(
    make_service: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Right after a summary, a turn at age 30 and one at age 60 each parse only the lines
    of the summary and the kept turns (not the tool's 20 turns), the same count at both."""
    service, heinzel_id, _ = make_service()
    keep = service.settings.heinzel.summary_keep_turns
    path = service.home.spine_path(heinzel_id)
    parsed = _counting(monkeypatch)
    counts = []
    for first in (0, 30):
        _aged(service, heinzel_id, 30, first)
        needed = _context_lines(path, keep)
        parsed[0] = 0
        host = TurnHost(service, model=answering(NOTHING))
        wake = Wake("asked", keys.asked(heinzel_id, f"probe{first}"))
        host.run_wakes(heinzel_id, [wake], adapters=default_adapters(service.settings))
        assert 0 < parsed[0] <= needed
        counts.append(parsed[0])
    assert counts[0] == counts[1]


def test_previous_turns_in_a_real_turn_shows_the_turns_before_it(
    make_service: Callable[..., Any],
) -> None:
    """A turn right after a summary whose model calls previous_turns(20) gets the same 20
    turns a view read whole at its start gives, read only when the tool was called."""
    service, heinzel_id, _ = make_service()
    _aged(service, heinzel_id, 30)
    path = service.home.spine_path(heinzel_id)
    expected = _previous_turns(_whole(path), TOOL_TURNS)
    got: list[Any] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = [
            part
            for message in messages
            if isinstance(message, ModelRequest)
            for part in message.parts
            if isinstance(part, ToolReturnPart) and part.tool_name == "previous_turns"
        ]
        if not returns:
            return ModelResponse(parts=[ToolCallPart("previous_turns", {"n": TOOL_TURNS})])
        got.append(returns[0].content)
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, NOTHING)])

    host = TurnHost(service, model=FunctionModel(respond, model_name="offline"))
    wake = Wake("asked", keys.asked(heinzel_id, "probe"))
    (state,) = host.run_wakes(heinzel_id, [wake], adapters=default_adapters(service.settings))
    assert state.disposition == "skipped"
    assert got == [expected]
    assert len({line.split()[2] for line in expected if len(line.split()) > 2}) >= TOOL_TURNS
