"""The spine's budget (ADR 0049 statement 4): what one drafted turn and one nothing-moved
skip add to ``session.jsonl``, counted in bytes on a deterministic turn.

The turn is `tests/bench/bench_turns.py`'s (three file inputs, the offline model, two tool
calls, one draft placed in a Markdown file), run at a fixed time. The only length that is
not hz's is the work folder's path (the asset's absolute path is in the effect's key and in
``draft.placed``): it is counted as if it were ``/w``, so the figure does not depend on
where pytest puts its temporary folder. docs/spine.md ("Where the bytes go") has the
table these figures come from.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from heinzel.config import HeinzelSettings, Settings
from heinzel.service import Service
from heinzel.store.home import Home
from heinzel.store.sources import TickFetch
from heinzel.turns import Turns, default_adapters
from ledger.spine import read_events, verify
from machines import Wake, keys
from machines.core.fold import fold
from machines.stores.journal import expand_carried

AT = datetime(2026, 10, 30, 15, tzinfo=UTC)
SLOT = "2026-10-30T15:00"
"""A real schedule slot (`machines.keys.schedule`), as long as the tick writes it."""
DRAFTED_BUDGET = 2048
SKIP_BUDGET = 300
DRAFTED_NOW = 1915
"""What a drafted turn costs now, the folder counted as ``/w``: 5 lines (2,434 B in 7
lines when the effect's ``effect.done`` and ``draft.placed`` were lines of their own,
3,332 B in 11 when each step start was one too; 13 B of it are ``turn.finished``'s
``tokens``, the sum its requests' lines carry, which ADR 0049 statement 20 asks for)."""

CONTRACT = """---
name: weekly-report
kind: responsibility
hz:
  render_on_schedule: {render}
  requires: [files:read, documents:write]
  inputs:
    merged_prs: {{from: files.read, args: {{path: prs.json}}}}
    issues: {{from: files.read, args: {{path: issues.txt}}}}
    events: {{from: files.read, args: {{path: events.txt}}}}
  outputs:
    section: {{asset: "file:report.md"}}
  publishes: [documents.place_draft]
---

### Goal

This week's section.

### Done when

- [ ] every item of `merged_prs` is covered
"""


def _run(root: Path, render: str) -> tuple[Path, Path, str]:
    """One turn of a fresh Heinzelmännchen: (spine, work folder, draft text or "")."""
    work = root / "work"
    work.mkdir(parents=True)
    (work / "prs.json").write_text('[{"title": "Fix checkout"}, {"title": "Add PayPal"}]')
    (work / "issues.txt").write_text("- CHK-1 done\n- CHK-2 open\n")
    (work / "events.txt").write_text("- Mon: planning\n")
    (work / "report.md").write_text("# Report\n")
    (work / "c.prose.md").write_text(CONTRACT.format(render=render))
    settings = Settings(heinzel=HeinzelSettings(home=root / "home"))
    service = Service(Home(root / "home"), lambda: AT, settings, owner="me")
    heinzel_id = str(service.create_from_files([str(work / "c.prose.md")])[0]["id"])
    service.approve(heinzel_id)
    wake = Wake("schedule", keys.schedule(heinzel_id, SLOT))
    staged = TickFetch(staged=[], fetches=0) if render == "if-moved" else None
    (state,) = Turns(service).run_wakes(
        heinzel_id, [wake], adapters=default_adapters(settings), staged=staged
    )
    assert state.disposition == ("skipped" if render == "if-moved" else "drafted")
    return service.home.spine_path(heinzel_id), work, (work / "report.md").read_text()


def _turn_bytes(spine: Path, work: Path) -> int:
    """Bytes (newlines included) of the spine's last turn, the work folder counted as /w."""
    raw = spine.read_bytes().split(b"\n")
    events = list(read_events(spine))
    turn = events[-1].turn
    lines = [raw[e.seq - 1] for e in events if e.turn == turn]
    folder = str(work).encode("utf-8")
    return sum(len(line.replace(folder, b"/w")) + 1 for line in lines)


@pytest.fixture(scope="module")
def drafted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    return _run(tmp_path_factory.mktemp("drafted"), "always")


class TestSpineBudget:
    def test_a_nothing_moved_skip_fits_its_budget(self, tmp_path: Path) -> None:
        """One line, at most 300 B, with a real slot key; the chain verifies."""
        spine, work, _ = _run(tmp_path, "if-moved")
        assert _turn_bytes(spine, work) <= SKIP_BUDGET
        assert verify(spine).ok

    def test_a_drafted_turn_is_no_larger_than_now(self, drafted: tuple[Path, Path, str]) -> None:
        """The cut holds: a drafted turn is at most its measured size, the chain verifies
        and the spine holds none of the draft's text (the content rule)."""
        spine, work, placed = drafted
        assert _turn_bytes(spine, work) <= DRAFTED_NOW
        assert verify(spine).ok
        events = list(read_events(spine))
        mine = [e for e in events if e.turn == events[-1].turn]
        assert [e.kind for e in mine] == [
            "turn.started",
            "model.request",
            "model.request",
            "effect.started",
            "turn.finished",  # carries the effect's end: effect.done and draft.placed
        ]
        read = list(expand_carried(mine))  # the lines a reader sees, as one line each
        assert [e.kind for e in read if e.kind != "step.started"] == [
            "turn.started",
            "model.request",
            "model.request",
            "effect.started",
            "effect.done",
            "draft.placed",
            "turn.finished",
        ]
        key = mine[3].key
        assert [e.key for e in read if e.kind in ("effect.done", "draft.placed")] == [key, key]
        steps = [e.data["step"] for e in read if e.kind == "step.started"]
        assert steps == ["think", "outcome", "act", "finish"]  # carried, read back in order
        assert fold(mine[0].turn or "", events).disposition == "drafted"
        text = spine.read_text()
        assert "Fix checkout" in placed and "Fix checkout" not in text
        for event in expand_carried(read_events(spine)):
            if event.kind == "model.request" and not event.data.get("usd"):
                assert "usd" not in event.data  # nothing spent: no field
            if event.kind == "draft.placed":
                assert set(event.data) == {"asset", "output", "hash"}
        assert all(json.loads(line)["v"] == 1 for line in text.splitlines())

    def test_a_drafted_turn_fits_its_budget(self, drafted: tuple[Path, Path, str]) -> None:
        """ADR 0049 statement 4: about a kilobyte a turn; the target is 2,048 B."""
        spine, work, _ = drafted
        assert _turn_bytes(spine, work) <= DRAFTED_BUDGET
