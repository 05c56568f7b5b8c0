"""A team Heinzelmännchen that drafts into a document, through the `hz` executable: the
receipts of its draft and of the approval leave the machine and pass the lint, and the
lease the tick took is shown at once."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from datetime import datetime, timedelta
from pathlib import Path

from .test_two_machines import START, Machine, receipts

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "priya"

CONTRACT = """---
name: team-notes
kind: responsibility
hz:
  namespace: team
  schedule: "0 9 * * *"
  timezone: UTC
  owner: ana
  requires: [code-host:read, documents:write]
  inputs:
    merged_prs: {from: code-host.merged_pull_requests, args: {repo: acme/checkout}, window: 7d}
  outputs:
    section: {asset: "file:notes.md", valid_for: 7d}
  publishes: [documents.place_draft]
  agent: {max_usd: 0.01}
---

### Goal

Keep the team's notes.

### Maintains

- `section`: today's notes

### Done when

- [ ] it is true
"""


def approved(tmp_path: Path) -> tuple[Path, Path, Machine]:
    """A bare team repository, a copy of the sources, and Ana with team-notes approved."""
    remote = tmp_path / "team.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    (tmp_path / "team-notes.prose.md").write_text(CONTRACT, encoding="utf-8")
    sources = shutil.copytree(FIXTURES, tmp_path / "sources")
    ana = Machine(tmp_path, "ana", remote)
    ana.hz(START, "heinzel", "new", "--from", str(tmp_path / "team-notes.prose.md"))
    ana.hz(START, "approve", "team-notes")
    return remote, sources, ana


def test_a_draft_and_its_approval_leave_as_receipts_the_lint_admits(tmp_path: Path) -> None:
    """Ana's daemon drafts the slot into notes.md and, once she approved it, learns: both
    ticks exit 0, hz/state holds the draft.placed and approval.observed receipts (their
    keys without the document's path), nothing is refused, and `hz team lint` passes."""
    remote, sources, ana = approved(tmp_path)
    slot = START + timedelta(days=4, hours=9, minutes=5)  # Friday's slot

    def tick(now: datetime) -> subprocess.CompletedProcess[str]:
        return ana.hz(now, "system", "daemon", "tick", check=False, HZ_FIXTURE_SOURCES=str(sources))

    drafted = tick(slot)
    assert (drafted.returncode, drafted.stderr) == (0, "")
    assert "team-notes: schedule -> drafted" in drafted.stdout
    ana.hz(slot, "approve", "team-notes")
    learned = tick(slot + timedelta(minutes=5))
    assert (learned.returncode, learned.stderr) == (0, "")

    found = receipts(remote)
    kinds = sorted(str(r["kind"]) for r in found)
    assert kinds == [
        "approval.observed",
        "contract.amended",
        "draft.placed",
        "lease.granted",
        "turn.finished",
        "turn.finished",
    ]
    assert not any("notes.md" in json.dumps(r) for r in found)
    # the drafting turn's receipt carries the fingerprint of the input it read
    [slot_turn] = [r for r in found if r["kind"] == "turn.finished" and r["cause"] == "schedule"]
    fps = slot_turn["input_fps"]
    assert isinstance(fps, list) and len(fps) == 1
    assert re.fullmatch(r"(sha256:)?[0-9a-f]{64}", str(fps[0]))
    assert not list((ana.root / "home" / "team" / "refused").glob("*"))
    lint = ana.hz(slot, "team", "lint", "--json")
    assert json.loads(lint.stdout) == {"ok": True, "problems": []}


def test_the_lease_a_tick_took_is_shown_before_the_next_fetch(tmp_path: Path) -> None:
    """Right after Ana's first tick took the lease, `hz team status` and `hz heinzel list
    --namespace team` show her holding it (her own push is known without a fetch)."""
    _, sources, ana = approved(tmp_path)
    now = START + timedelta(minutes=5)
    ana.hz(now, "system", "daemon", "tick", HZ_FIXTURE_SOURCES=str(sources))

    status = json.loads(ana.hz(now, "team", "status", "--json").stdout)
    assert [(lease["name"], lease["holder"], lease["mine"]) for lease in status["leases"]] == [
        ("team-notes", "ana", True)
    ]
    [row] = json.loads(ana.hz(now, "heinzel", "list", "--namespace", "team", "--json").stdout)
    assert row["team"]["holder"] == "ana"
