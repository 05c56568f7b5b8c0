"""Turns that do not draft: nothing moved, the cap reached, an unmet Done-when item."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from heinzel.config import HeinzelSettings, Settings
from heinzel.service import Service
from heinzel.store.sources import TickFetch
from heinzel.turns import Turns, default_adapters
from ledger.spine import read_events
from machines import Wake, keys


def _turn_lines(service: Service, heinzel_id: str) -> list[Any]:
    return [e for e in read_events(service.home.spine_path(heinzel_id)) if e.turn]


class TestSkips:
    """What a turn writes when it does not place a draft."""

    def test_nothing_moved_is_one_line(self, make_service: Callable[..., Any]) -> None:
        """if-moved with nothing moved: one turn.skipped line, no model call, no body."""
        service, heinzel_id, folder = make_service(render="if-moved")
        wake = Wake("schedule", keys.schedule(heinzel_id, "2026-10-30T15:00"))
        states = Turns(service).run_wakes(
            heinzel_id,
            [wake],
            adapters=default_adapters(service.settings),
            staged=TickFetch(staged=[], fetches=0),
        )
        assert [s.state for s in states] == ["skipped"]
        lines = _turn_lines(service, heinzel_id)
        assert [e.kind for e in lines] == ["turn.skipped"]
        assert lines[0].data["reason"] == "nothing-moved"
        assert not list(service.home.turns_dir(heinzel_id).glob("*.jsonl"))
        assert "hz:draft" not in (folder / "report.md").read_text(encoding="utf-8")

    def test_the_same_schedule_key_runs_once(self, make_service: Callable[..., Any]) -> None:
        """A schedule wake whose key already ended does nothing the second time."""
        service, heinzel_id, _ = make_service()
        wake = Wake("schedule", keys.schedule(heinzel_id, "2026-10-30T15:00"))
        adapters = default_adapters(service.settings)
        first = Turns(service).run_wakes(heinzel_id, [wake], adapters=adapters)
        assert [s.disposition for s in first] == ["drafted"]
        assert Turns(service).run_wakes(heinzel_id, [wake], adapters=adapters) == []

    def test_a_reached_cap_skips_with_cap(self, make_service: Callable[..., Any]) -> None:
        """With a turn cap of zero the turn ends skipped cap and places nothing."""
        service, heinzel_id, folder = make_service()
        capped = Settings(heinzel=HeinzelSettings(home=service.home.root, max_usd=0))
        service = Service(service.home, service.clock, capped, owner="me")
        result = Turns(service).wake(heinzel_id, None, adapters=default_adapters(capped))
        assert (result["state"], result["reason"]) == ("skipped", "cap")
        assert "hz:draft" not in (folder / "report.md").read_text(encoding="utf-8")
