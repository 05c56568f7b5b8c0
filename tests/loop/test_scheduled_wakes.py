"""Source-changed wakes a scheduled Heinzelmännchen too (ADR 0049 statement 7): once a turn
of it read its input, the input's move wakes it between slots, and a move seen in the tick
its slot is due in is one turn with both causes. Its first look at an input is its slot.
`hz system daemon tick` as a process, the offline model, the clock set per command."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ledger.spine import read_events
from tests.loop.conftest import Runner
from tests.turns.conftest import CONTRACT

SCHEDULED = (
    CONTRACT.format(render="always", done_when="every item of `notes` is covered")
    .replace(
        "  render_on_schedule: always\n",
        '  schedule: "0 15 * * FRI"\n  timezone: UTC\n  render_on_schedule: always\n',
    )
    .replace(
        "notes: {from: files.read, args: {path: notes.txt}}",
        "notes: {from: files.read, args: {path: notes.txt}, recheck: 1m}",
    )
)


def _started(hz: Runner) -> list[list[str]]:
    """Each turn's causes, in order."""
    [spine] = Path(hz.hz_env["HZ_HOME"]).glob("heinzel/hz-*/session.jsonl")
    found: list[list[str]] = []
    for event in read_events(spine):
        if event.kind == "turn.started":
            data: dict[str, Any] = event.data
            causes = [c["cause"] for c in data.get("causes") or []] or [str(data["cause"])]
            found.append(causes)
    return found


def _tick(hz: Runner, at: str) -> None:
    ticked = hz("system", "daemon", "tick", env={"HZ_NOW": at})
    assert ticked.code == 0, ticked.err


def test_a_scheduled_one_wakes_when_its_input_moved(hz: Runner, folder: Path) -> None:
    """Before its first slot nothing wakes it (its first look is the slot); after the
    slot's turn read notes.txt, an edit to it wakes a source-changed turn on a Tuesday;
    an edit seen at the next Friday's slot is one turn with causes schedule and
    source-changed."""
    (folder / "digest.prose.md").write_text(SCHEDULED, encoding="utf-8")
    assert hz.in_process("heinzel", "new", "--from", "digest.prose.md").code == 0
    assert hz.in_process("approve", "notes-digest").code == 0
    first = len(_started(hz))  # the created turn, if any
    _tick(hz, "2026-10-30T14:10:00Z")  # notes.txt never read by a turn: no wake
    assert len(_started(hz)) == first
    _tick(hz, "2026-10-30T15:01:00Z")
    assert _started(hz)[first:] == [["schedule"]]
    _tick(hz, "2026-11-02T09:00:00Z")  # nothing moved: nothing wakes
    assert len(_started(hz)) == first + 1
    (folder / "notes.txt").write_text("ship the rounding fix\nand the docs\n", encoding="utf-8")
    _tick(hz, "2026-11-03T09:00:00Z")
    assert _started(hz)[first + 1 :] == [["source-changed"]]
    _tick(hz, "2026-11-03T09:05:00Z")  # seen: not again
    assert len(_started(hz)) == first + 2
    (folder / "notes.txt").write_text("ship it all\n", encoding="utf-8")
    _tick(hz, "2026-11-06T15:01:00Z")
    assert _started(hz)[first + 2 :] == [["schedule", "source-changed"]]


def test_source_changed_at_slot_waits_for_the_slot(hz: Runner, folder: Path) -> None:
    """``source_changed: at-slot``: after the slot's turn read notes.txt, an edit wakes
    nothing on Tuesday; the next Friday's slot is one turn of cause schedule alone."""
    at_slot = SCHEDULED.replace("  timezone: UTC\n", "  timezone: UTC\n  source_changed: at-slot\n")
    (folder / "digest.prose.md").write_text(at_slot, encoding="utf-8")
    assert hz.in_process("heinzel", "new", "--from", "digest.prose.md").code == 0
    assert hz.in_process("approve", "notes-digest").code == 0
    first = len(_started(hz))
    _tick(hz, "2026-10-30T15:01:00Z")
    assert _started(hz)[first:] == [["schedule"]]
    (folder / "notes.txt").write_text("ship the rounding fix\nand the docs\n", encoding="utf-8")
    _tick(hz, "2026-11-03T09:00:00Z")
    assert len(_started(hz)) == first + 1
    _tick(hz, "2026-11-06T15:01:00Z")
    assert _started(hz)[first + 1 :] == [["schedule"]]
