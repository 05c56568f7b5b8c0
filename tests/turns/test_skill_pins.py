"""A resumed turn runs under the skill text it was pinned to, or not at all (HZH276)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ledger.spine import read_events
from tests import forkhz
from tests.turns.conftest import CONTRACT

SKILL = """---
name: house-style
description: How this team writes digests.
---

Put the riskiest item first.
"""
EDITED = SKILL.replace("riskiest item first", "zebra crossing first")


def _hz(work: Path, *args: str, crash_at: str | None = None) -> subprocess.CompletedProcess[str]:
    tmp = work.parent
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp),
        "XDG_CONFIG_HOME": str(tmp / "xdg"),
        "HZ_HOME": str(tmp / "home"),
        "HZ_CONFIG": "",
        "HZ_NOW": "2026-10-30T14:00:00.000Z",
        "HZ_USER": "me",
        "HZ_TESTING": "1",
    }
    if crash_at:
        env["HZ_CRASH_AT"] = crash_at
    return forkhz.run(
        [sys.executable, "-m", "heinzel", *args],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _events(work: Path) -> list[Any]:
    (spine,) = (work.parent / "home" / "heinzel").glob("*/session.jsonl")
    return list(read_events(spine))


@pytest.fixture
def killed(tmp_path: Path) -> Path:
    """A project whose digest uses its house-style skill, killed after its first
    model.request; returns the work folder."""
    work = tmp_path / "work"
    (work / "skills" / "house-style").mkdir(parents=True)
    (work / "hz.toml").write_text("[heinzel]\n", encoding="utf-8")
    (work / "skills" / "house-style" / "SKILL.md").write_text(SKILL, encoding="utf-8")
    (work / "notes.txt").write_text("ship the rounding fix\n", encoding="utf-8")
    (work / "report.md").write_text("# Report\n", encoding="utf-8")
    text = CONTRACT.format(render="always", done_when="every item of `notes` is covered")
    contract = work / "digest.prose.md"
    contract.write_text(text.replace("hz:\n", "hz:\n  uses: [house-style]\n", 1), "utf-8")
    assert _hz(work, "heinzel", "new", "--from", str(contract)).returncode == 0
    assert _hz(work, "approve", "notes-digest").returncode == 0
    woke = _hz(
        work, "heinzel", "wake", "notes-digest", "--message", "now", crash_at="after:model.request"
    )
    assert woke.returncode == 137, woke.stderr[-2000:]
    return work


@pytest.mark.kill
class TestSkillPinsOnResume:
    def test_an_edited_skill_stops_the_resume_until_restored(self, killed: Path) -> None:
        """Killed after model.request, the skill edited: recovery refuses with HZH276 naming
        the skill and leaves the turn open; restored, the turn resumes and finishes with the
        pinned text in its body, never the edited one."""
        skill = killed / "skills" / "house-style" / "SKILL.md"
        skill.write_text(EDITED, encoding="utf-8")
        refused = _hz(killed, "system", "daemon", "tick", "--strict")
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert "HZH276" in refused.stderr and "house-style" in refused.stderr, refused.stderr
        turn = next(e.turn for e in _events(killed) if e.kind == "turn.started")
        mine = [e for e in _events(killed) if e.turn == turn]
        assert not any(e.kind == "turn.finished" for e in mine), [e.kind for e in mine]
        skill.write_text(SKILL, encoding="utf-8")
        ticked = _hz(killed, "system", "daemon", "tick")
        assert ticked.returncode == 0, ticked.stderr[-2000:]
        mine = [e for e in _events(killed) if e.turn == turn]
        assert any(e.kind == "turn.resumed" for e in mine)
        assert (mine[-1].kind, mine[-1].data.get("disposition")) == ("turn.finished", "drafted")
        body = (killed.parent / "home" / "heinzel").glob(f"*/turns/{turn}.jsonl")
        text = next(body).read_text(encoding="utf-8")
        assert "riskiest item first" in text and "zebra crossing" not in text

    def test_a_skill_added_later_does_not_join_a_resumed_turn(self, killed: Path) -> None:
        """A more specific copy with other text installed after the start: the resumed turn
        still finds its pinned copy and runs under it; the next turn uses the new copy."""
        (killed / "hz.toml").write_text('[heinzel]\nskills = ["mine"]\n', encoding="utf-8")
        newer = killed / "mine" / "house-style"
        newer.mkdir(parents=True)
        (newer / "SKILL.md").write_text(EDITED, encoding="utf-8")
        ticked = _hz(killed, "system", "daemon", "tick")
        assert ticked.returncode == 0, ticked.stderr[-2000:]
        started = [e for e in _events(killed) if e.kind == "turn.started"]
        first = [e for e in _events(killed) if e.turn == started[0].turn]
        assert first[-1].kind == "turn.finished", first[-1].data
        body = (killed.parent / "home" / "heinzel").glob(f"*/turns/{started[0].turn}.jsonl")
        assert "zebra crossing" not in next(body).read_text(encoding="utf-8")
        woke = _hz(killed, "heinzel", "wake", "notes-digest", "--message", "again")
        assert woke.returncode == 0, woke.stderr[-2000:]
        pins = [
            e.data["pins"]["skills"]["house-style"]
            for e in _events(killed)
            if e.kind == "turn.started"
        ]
        assert pins[0] == started[0].data["pins"]["skills"]["house-style"]
        assert pins[-1] != pins[0]
