"""A turn's view of the past read from the index and the spine's tail is the whole spine's."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from heinzel.engine import SpineRecord, SpineView, TurnSpec
from heinzel.engine.context import ContextSettings, build_context
from heinzel.turns import TurnHost, default_adapters
from heinzel.turns.view import spine_view
from heinzel.vocabulary import HOST_HIDDEN
from ledger.spine import read_events
from machines import Wake, keys
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
            for e in read_events(path)
            if e.kind not in HOST_HIDDEN
        )
    )


def test_the_tail_view_builds_the_same_context_as_the_whole_spine(
    make_service: Callable[..., Any],
) -> None:
    """After 30 turns with summaries and an early context edit, the view from the index
    and the tail reads fewer lines and gives the context and the tool's turns unchanged."""
    service, heinzel_id, _ = make_service()
    service.append(heinzel_id, "context.edit", {"target": "turn:early", "replacement": None})
    summary = {"asset": "file:report.md", "wants": "weekly digests", "decisions": ["short"]}
    plain = TurnHost(service, model=answering({"report": "nothing to add"}))
    summing = TurnHost(service, model=answering({"report": "summed", "summary": summary}))
    adapters = default_adapters(service.settings)
    for n in range(30):
        host = summing if n % 10 == 9 else plain
        wake = Wake("asked", keys.asked(heinzel_id, f"r{n}"))
        host.run_wakes(heinzel_id, [wake], adapters=adapters)
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
        started = [r.turn for r in whole.records if r.kind == "turn.started"][-20:]
        assert [r.turn for r in tail.records if r.kind == "turn.started"][-20:] == started


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
