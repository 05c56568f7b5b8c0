"""A whole turn in hz against the same agent run bare, and the spine bytes of a turn.

A turn on the offline model (three inputs read from files, two tool calls, a draft placed
in a real Markdown file) through `Service.run_wakes` (staging, the spine with its lock,
the index, the machine's checkpoints, the engine, the effect ledger) against the same
pydantic-ai Agent run bare on the same context; and the bytes one drafted turn and one
nothing-moved skip take in the spine (targets: 2 KB and 300 bytes), per kind beside
the same turn in the previous line format (``fixtures/spines/v1-session``).
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from pydantic_ai import Agent

from heinzel.config import HeinzelSettings, Settings
from heinzel.engine import (
    InputSpec,
    Outcome,
    SpineView,
    TurnServices,
    TurnSpec,
    build_context,
    build_toolset,
    offline_model,
)
from heinzel.logs import configure_logging
from heinzel.service import Service
from heinzel.store.home import Home
from heinzel.store.sources import TickFetch
from heinzel.turns import Turns, default_adapters
from ledger.spine import read_events
from machines import Wake, keys

AT = datetime(2026, 10, 30, 15, tzinfo=UTC)
ROUNDS = 20
DONE = "every item of `merged_prs` is covered"
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

- [ ] {done}
"""


def setup(root: Path, render: str = "always") -> tuple[Service, str]:
    folder = root / "work"
    folder.mkdir(parents=True)
    (folder / "prs.json").write_text('[{"title": "Fix checkout"}, {"title": "Add PayPal"}]')
    (folder / "issues.txt").write_text("- CHK-1 done\n- CHK-2 open\n")
    (folder / "events.txt").write_text("- Mon: planning\n")
    (folder / "report.md").write_text("# Report\n")
    (folder / "c.prose.md").write_text(CONTRACT.format(render=render, done=DONE))
    settings = Settings(heinzel=HeinzelSettings(home=root / "home"))
    service = Service(Home(root / "home"), lambda: AT, settings, owner="me")
    heinzel_id = service.create_from_files([str(folder / "c.prose.md")])[0]["id"]
    service.approve(heinzel_id)
    return service, heinzel_id


def hz_rounds(root: Path) -> float:
    service, heinzel_id = setup(root)
    adapters = default_adapters(service.settings)
    start = time.perf_counter()
    for n in range(ROUNDS):
        wake = Wake("schedule", keys.schedule(heinzel_id, f"slot{n}"))
        (state,) = Turns(service).run_wakes(heinzel_id, [wake], adapters=adapters)
        assert state.disposition == "drafted", state
    return (time.perf_counter() - start) / ROUNDS


SPEC = TurnSpec(
    turn="tn-bench",
    cause="schedule",
    contract_name="weekly-report",
    contract_version=1,
    body="### Goal\n\nThis week's section.\n",
    started_at=AT,
    inputs=(
        InputSpec("merged_prs", '{"title": "Fix checkout"}\n{"title": "Add PayPal"}'),
        InputSpec("issues", "- CHK-1 done\n- CHK-2 open\n"),
        InputSpec("events", "- Mon: planning\n"),
    ),
    outputs=("section",),
    done_when=(DONE,),
)


def bare_rounds() -> float:
    async def rounds() -> float:
        start = time.perf_counter()
        for _ in range(ROUNDS):
            context = build_context(SPEC, SpineView())
            agent = Agent(
                offline_model(),
                instructions=context.instructions,
                output_type=Outcome,
                toolsets=[build_toolset(SPEC, TurnServices())],
            )
            result = await agent.run(message_history=context.messages)
            assert result.output.draft is not None
        return (time.perf_counter() - start) / ROUNDS

    return asyncio.run(rounds())


def last_turn(service: Service, heinzel_id: str) -> str:
    """The id of the session's last turn."""
    return str(list(read_events(service.home.spine_path(heinzel_id)))[-1].turn)


def turn_bytes(service: Service, heinzel_id: str) -> tuple[int, int, list[str], int]:
    """Bytes of the last turn's lines, their count and kinds, and the think step's bytes."""
    path = service.home.spine_path(heinzel_id)
    raw = path.read_bytes().split(b"\n")
    events = list(read_events(path))
    last = events[-1].turn
    mine = [(e, raw[e.seq - 1]) for e in events if e.turn == last]
    think = sum(len(line) + 1 for e, line in mine if e.kind in ("model.request", "step.tool"))
    total = sum(len(line) + 1 for _, line in mine)
    return total, len(mine), [e.kind for e, _ in mine], think


OLD_SESSION = Path(__file__).resolve().parents[2] / "fixtures" / "spines" / "v1-session"
"""The same two turns as written by the previous line format (the baseline of the bytes)."""


def kind_bytes(path: Path, turn: str) -> dict[str, int]:
    """Bytes per kind of ``turn``'s lines in the spine at ``path`` (newlines included)."""
    raw = path.read_bytes().split(b"\n")
    sizes: dict[str, int] = {}
    for event in read_events(path):
        if event.turn == turn:
            sizes[event.kind] = sizes.get(event.kind, 0) + len(raw[event.seq - 1]) + 1
    return sizes


def print_kinds(new_path: Path, new_turn: str) -> None:
    """Per kind, the bytes of the old fixture's drafted turn beside this run's."""
    old_path = OLD_SESSION / "session.jsonl"
    old_turn = next(e.turn for e in read_events(old_path) if e.kind == "turn.started")
    old, new = kind_bytes(old_path, str(old_turn)), kind_bytes(new_path, new_turn)
    print("  per kind (previous format, fixtures/spines/v1-session -> now):")
    for kind in dict.fromkeys([*old, *new]):
        print(f"    {kind:<15} {old.get(kind, 0):6d} -> {new.get(kind, 0):6d} B")
    print(f"    {'total':<15} {sum(old.values()):6d} -> {sum(new.values()):6d} B")


def main() -> None:
    configure_logging("cli", stream=sys.stderr, clock=lambda: AT, level="warning")
    with tempfile.TemporaryDirectory() as tmp:
        ours = hz_rounds(Path(tmp) / "a")
        bare = bare_rounds()
        print(f"offline turn under hz:     {ours * 1000:7.2f} ms")
        print(f"same agent run bare:       {bare * 1000:7.2f} ms")
        print(f"ratio:                     {ours / bare:7.2f}x")
        service, heinzel_id = setup(Path(tmp) / "b")
        wake = Wake("schedule", keys.schedule(heinzel_id, "slot"))
        Turns(service).run_wakes(heinzel_id, [wake], adapters=default_adapters(service.settings))
        total, count, kinds, think = turn_bytes(service, heinzel_id)
        print(f"drafted turn spine bytes:  {total:7d} B for {count} lines ({', '.join(kinds)})")
        print(f"  the think step's lines alone: {think} B")
        verdict = "PASS" if total <= 2048 else "MISS"
        print(f"{verdict} drafted turn spine bytes: {total} B (target 2048 B)")
        print_kinds(service.home.spine_path(heinzel_id), last_turn(service, heinzel_id))
        service, heinzel_id = setup(Path(tmp) / "c", render="if-moved")
        Turns(service).run_wakes(
            heinzel_id,
            [Wake("schedule", keys.schedule(heinzel_id, "slot"))],
            adapters=default_adapters(service.settings),
            staged=TickFetch(staged=[], fetches=0),
        )
        total, count, kinds, _ = turn_bytes(service, heinzel_id)
        print(f"nothing-moved skip bytes:  {total:7d} B for {count} line ({kinds[0]})")
        verdict = "PASS" if total <= 300 else "MISS"
        print(f"{verdict} nothing-moved skip spine bytes: {total} B (target 300 B)")


if __name__ == "__main__":
    main()
