"""A spine written before the lines were shortened reads the same as one written now.

``fixtures/spines/v1-session`` is a session recorded by the previous format (a drafted
turn and a nothing-moved skip of ``weekly-report``: ``causes``/``keys`` repeated in
``turn.started``, ``lessons_seq: null``, the effect key again in ``draft.placed``,
``moved: []``, step inputs as whole ``sha256:`` hashes). The same two turns are run now
and every reader is asked about both: the fold, the turn bodies, and through the ``hz``
executable ``heinzel show``, ``heinzel report`` and ``heinzel verify``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from heinzel.config import HeinzelSettings, Settings
from heinzel.service import Service
from heinzel.store.home import Home
from heinzel.store.sources import TickFetch
from heinzel.turns import Turns, default_adapters
from ledger.event import Event
from ledger.spine import read_events
from machines import DiskBody, Wake, keys
from machines.core.fold import TurnState, fold
from machines.stores.journal import expand_steps
from tests import forkhz

OLD = Path(__file__).resolve().parents[2] / "fixtures" / "spines" / "v1-session"
OLD_ID = "hz-01M66N6AC075ZZ5M4SHMXSS4BS"
OLD_WORK = "/tmp/oldspine/r/work"
AT = datetime(2026, 10, 30, 15, tzinfo=UTC)
DONE = "every item of `merged_prs` is covered"
CONTRACT = """---
name: weekly-report
kind: responsibility
hz:
  render_on_schedule: if-moved
  requires: [files:read, documents:write]
  inputs:
    merged_prs: {from: files.read, args: {path: prs.json}}
    issues: {from: files.read, args: {path: issues.txt}}
    events: {from: files.read, args: {path: events.txt}}
  outputs:
    section: {asset: "file:report.md"}
  publishes: [documents.place_draft]
---

### Goal

This week's section.

### Done when

- [ ] every item of `merged_prs` is covered
"""


def _new_session(root: Path) -> tuple[Path, str, str]:
    """The fixture's two turns run by this code: (home, heinzel id, work folder)."""
    work = root / "work"
    work.mkdir(parents=True)
    (work / "prs.json").write_text('[{"title": "Fix checkout"}, {"title": "Add PayPal"}]')
    (work / "issues.txt").write_text("- CHK-1 done\n- CHK-2 open\n")
    (work / "events.txt").write_text("- Mon: planning\n")
    (work / "report.md").write_text("# Report\n")
    (work / "c.prose.md").write_text(CONTRACT)
    settings = Settings(heinzel=HeinzelSettings(home=root / "home"))
    service = Service(Home(root / "home"), lambda: AT, settings, owner="me")
    heinzel_id = str(service.create_from_files([str(work / "c.prose.md")])[0]["id"])
    service.approve(heinzel_id)
    adapters = default_adapters(settings)
    turns = Turns(service)
    turns.run_wakes(
        heinzel_id, [Wake("schedule", keys.schedule(heinzel_id, "slot1"))], adapters=adapters
    )
    skip = Wake("schedule", keys.schedule(heinzel_id, "slot2"))
    turns.run_wakes(heinzel_id, [skip], adapters=adapters, staged=TickFetch(staged=[], fetches=0))
    return root / "home", heinzel_id, str(work)


def _old_session(root: Path) -> tuple[Path, str, str]:
    """The fixture copied into a fresh home, its index rebuilt by ``hz heinzel reindex``."""
    shutil.copytree(OLD, root / "home" / "heinzel" / OLD_ID)
    _hz(root, "heinzel", "reindex")
    return root / "home", OLD_ID, OLD_WORK


def _hz(root: Path, *args: str) -> str:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(root),
        "XDG_CONFIG_HOME": str(root / "xdg"),
        "HZ_HOME": str(root / "home"),
        "HZ_CONFIG": "",
        "HZ_NOW": "2026-10-30T16:00:00.000Z",
        "HZ_USER": "me",
        "HZ_TESTING": "1",
    }
    done = forkhz.run(
        [sys.executable, "-m", "heinzel", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _turns(events: list[Event]) -> list[str]:
    return list(dict.fromkeys(e.turn for e in events if e.turn))


def _normal(text: str, heinzel_id: str, work: str, turns: list[str]) -> Any:
    """``text`` with the ids and the work folder named alike in both sessions."""
    text = text.replace(heinzel_id, "HZ").replace(work, "WORK")
    for n, turn in enumerate(turns):
        text = text.replace(turn, f"TURN{n}")
    return json.loads(text)


def _fold_view(state: TurnState) -> dict[str, Any]:
    return {
        "state": state.state,
        "disposition": state.disposition,
        "reason": state.reason,
        "cause": state.cause,
        "keys": state.keys,
        "causes": state.causes,
        "effects": [(r.outcome, r.event_seen) for r in state.effects.values()],
        "steps": sorted(k for k, v in state.inputs.items() if v is not None),
    }


def _readings(root: Path, home: Path, heinzel_id: str, work: str) -> dict[str, Any]:
    """What each reader makes of the session, ids and folder normalised."""
    spine = home / "heinzel" / heinzel_id / "session.jsonl"
    events = list(read_events(spine))
    turns = _turns(events)
    body = DiskBody(home / "heinzel" / heinzel_id)
    for event in expand_steps(events):  # each step input is in the body by its spine name
        if event.kind == "step.started" and event.turn:
            assert body.get(event.turn, str(event.data["input"])) is not None
    folded = {turn: _fold_view(fold(turn, events)) for turn in turns}
    show = json.loads(_hz(root, "heinzel", "show", "weekly-report", "--json"))
    keep = ("cause", "state", "disposition", "reason", "contract_version", "cost_usd")
    shown = {
        "turns": [{k: t[k] for k in keep} for t in show["turns"]],
        "drafts": [
            {k: d[k] for k in ("key", "asset", "output", "contract_version", "state")}
            for d in show["drafts"]
        ],
    }
    report = json.loads(_hz(root, "heinzel", "report", "weekly-report", "--json"))
    for turn in report["turns"]:  # the draft's hash names the bytes, which hold the folder
        for wrote in turn["wrote"]:
            assert str(wrote.pop("hash")).startswith("sha256:")
        first, last = turn.pop("seqs")  # where the lines are: each format has its own count
        assert 1 <= first <= last
    verified = json.loads(_hz(root, "heinzel", "verify", "weekly-report", "--json"))
    raw = json.dumps({"fold": folded, "show": shown, "report": report})
    return {**_normal(raw, heinzel_id, work, turns), "verified": _summary(verified)}


def _summary(verified: Any) -> Any:
    rows = verified if isinstance(verified, list) else verified.get("spines", [verified])
    return [(r.get("ok"), len(r.get("breaks") or [])) for r in rows]


class TestOldSpines:
    def test_the_previous_format_reads_as_the_current_one(self, tmp_path: Path) -> None:
        """The fold, the bodies, show, report and verify read the old fixture and a spine
        written now alike: same keys, causes, pins, drafts, inputs and dispositions."""
        old = _readings(tmp_path / "old", *_old_session(tmp_path / "old"))
        new = _readings(tmp_path / "new", *_new_session(tmp_path / "new"))
        assert old == new
        drafted = old["fold"]["TURN0"]
        assert (drafted["disposition"], drafted["keys"]) == ("drafted", ["HZ@slot1"])
        assert drafted["causes"] == [{"cause": "schedule", "key": "HZ@slot1"}]
        assert drafted["steps"] == ["act", "finish", "outcome", "think"]
        assert old["fold"]["TURN1"]["reason"] == "nothing-moved"
        assert old["show"]["drafts"][0]["key"] == "HZ@v1@slot1@file:WORK/report.md"

    def test_the_fixture_is_the_old_format(self) -> None:
        """The fixture still holds what the new format no longer writes (so the test above
        reads both formats, not the new one twice)."""
        events = list(read_events(OLD / "session.jsonl"))
        started = next(e for e in events if e.kind == "turn.started")
        placed = next(e for e in events if e.kind == "draft.placed")
        step = next(e for e in events if e.kind == "step.started")
        assert started.data["keys"] == [started.key]
        assert started.data["pins"]["lessons_seq"] is None
        assert placed.data["key"] == placed.key
        assert str(step.data["input"]).startswith("sha256:")
