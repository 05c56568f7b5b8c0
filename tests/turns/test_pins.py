"""A resumed turn runs under what it was pinned to: killed mid-think, amended, recovered."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ledger.spine import read_events
from machines.stores.journal import expand_carried
from tests import forkhz
from tests.turns.conftest import CONTRACT

NOTES = "ship the rounding fix\nwrite the release notes\n"


def _hz(tmp: Path, *args: str, crash_at: str | None = None) -> subprocess.CompletedProcess[str]:
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
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _spine(tmp: Path) -> list[Any]:
    (spine,) = (tmp / "home" / "heinzel").glob("*/session.jsonl")
    return list(expand_carried(read_events(spine)))


def _setup(tmp: Path) -> Path:
    """An approved notes-digest whose turn is killed after its first model request."""
    work = tmp / "work"
    work.mkdir()
    (work / "notes.txt").write_text(NOTES, encoding="utf-8")
    (work / "report.md").write_text("# Report\n", encoding="utf-8")
    contract = work / "digest.prose.md"
    contract.write_text(
        CONTRACT.format(render="always", done_when="every item of `notes` is covered"),
        encoding="utf-8",
    )
    assert _hz(tmp, "heinzel", "new", "--from", str(contract)).returncode == 0
    assert _hz(tmp, "approve", "notes-digest").returncode == 0
    killed = _hz(
        tmp, "heinzel", "wake", "notes-digest", "--message", "now", crash_at="after:model.request"
    )
    assert killed.returncode == 137, killed.stderr[-2000:]
    return work


def _amend(tmp: Path, work: Path, text: str) -> None:
    v2 = work / "v2.prose.md"
    v2.write_text(text, encoding="utf-8")
    amended = _hz(tmp, "heinzel", "amend", "notes-digest", "--from", str(v2))
    assert amended.returncode == 0, amended.stderr
    approved = _hz(tmp, "approve", "notes-digest")
    assert approved.returncode == 0, approved.stderr


def _recover(tmp: Path) -> Any:
    ticked = _hz(tmp, "system", "daemon", "tick", "--json")
    assert ticked.returncode == 0, ticked.stderr[-2000:]
    turn = next(e.turn for e in _spine(tmp) if e.kind == "turn.started")
    return [e for e in _spine(tmp) if e.turn == turn]


@pytest.mark.kill
class TestPinsOnResume:
    """Pins of `turn.started` (contract version, lessons) hold after a crash."""

    def test_contract_version_is_pinned(self, tmp_path: Path) -> None:
        """Killed after model.request, v2 (another output) approved, recovered: the turn
        finishes drafted under v1, into v1's output."""
        work = _setup(tmp_path)
        v2 = CONTRACT.format(render="always", done_when="every item of `notes` is covered")
        _amend(tmp_path, work, v2.replace("file:report.md", "file:other.md"))
        lines = _recover(tmp_path)
        started = lines[0]
        assert started.data["pins"]["contract_version"] == 1
        assert any(e.kind == "turn.resumed" for e in lines)
        end = lines[-1]
        assert (end.kind, end.data.get("disposition")) == ("turn.finished", "drafted"), end.data
        assert (work / "report.md").read_text(encoding="utf-8").count("hz:draft key=") == 1
        placed = [e.key for e in lines if e.kind == "draft.placed"]
        assert placed and all("report.md" in str(key) for key in placed), placed
        # the tick may then run a new turn under v2 (into other.md); never the resumed one
        row = json.loads(_hz(tmp_path, "heinzel", "show", "notes-digest", "--json").stdout)
        assert row["contract_version"] == 2

    def test_lessons_are_pinned(self, tmp_path: Path) -> None:
        """A lesson recorded while the killed turn was open is not in its resumed request,
        and the next turn sees it."""
        from heinzel.config import HeinzelSettings, Settings
        from heinzel.service import Service
        from heinzel.store.home import Home

        from .conftest import NOW

        _setup(tmp_path)
        home = tmp_path / "home"
        settings = Settings(heinzel=HeinzelSettings(home=home))
        service = Service(Home(home), lambda: NOW, settings, owner="me")
        heinzel_id = str(service.resolve("notes-digest")["id"])
        sentence = "always mention the zebra crossing"
        service.append(
            heinzel_id,
            "lesson.recorded",
            {"sentence": sentence, "sha256": "0" * 16, "hunks": []},
            short_text=("sentence",),
        )
        lines = _recover(tmp_path)
        assert lines[0].data["pins"]["lessons_seq"] == 0  # pinned to none (seqs start at 1)
        assert lines[-1].kind == "turn.finished", lines[-1].data
        bodies = home / "heinzel" / heinzel_id / "turns"
        assert sentence not in (bodies / f"{lines[0].turn}.jsonl").read_text(encoding="utf-8")
        woken = _hz(tmp_path, "heinzel", "wake", "notes-digest", "--message", "again", "--json")
        assert woken.returncode == 0, woken.stderr[-2000:]
        turn = json.loads(woken.stdout)["turn"]
        assert sentence in (bodies / f"{turn}.jsonl").read_text(encoding="utf-8")
