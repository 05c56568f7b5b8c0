"""A home written by today's hz opened by the previous version's code (3edbe39, run from
its own tree by fixtures/homes/make_homes.py's `old_tree`): it reads the carried fields
right (its drafts and states are today's), and refuses, coded, to resume a turn pinned to
today's vocabulary, leaving the spine as it was (docs/spine.md, "Versions")."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests import forkhz

ROOT = Path(__file__).resolve().parents[2]
HZ = str(Path(sys.executable).with_name("hz"))
PREVIOUS = "3edbe39"


def _make_homes() -> object:
    spec = importlib.util.spec_from_file_location(
        "make_homes", ROOT / "fixtures" / "homes" / "make_homes.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_previous_hz_reads_todays_home_or_refuses(tmp_path: Path) -> None:
    """Today's hz drafts weekly-report and is killed in report-two's act (an open turn
    pinned to vocabulary 2). The previous hz lists both as today's does (the pending draft
    read from the carried end), verifies them, and its tick refuses the open turn with
    HZM081 naming both versions, writing nothing to that spine."""
    work = tmp_path / "work"
    shutil.copytree(ROOT / "fixtures" / "priya", work)
    # the contracts as the previous hz knew them: its compiler refuses a key added since
    # (`hz.source_changed`, HZC004), which is its refusal to misread, not this test's point
    for contract in work.glob("*.prose.md"):
        kept = [
            line
            for line in contract.read_text("utf-8").splitlines(keepends=True)
            if "source_changed:" not in line
        ]
        contract.write_text("".join(kept), "utf-8")
    text = (work / "weekly-report.prose.md").read_text(encoding="utf-8")
    (work / "report-two.prose.md").write_text(
        text.replace("name: weekly-report", "name: report-two").replace(
            "file:weekly-report.md", "file:report-two.md"
        ),
        encoding="utf-8",
    )
    shutil.copy(work / "weekly-report.md", work / "report-two.md")
    old = tmp_path / "old"
    old.mkdir()
    _make_homes().old_tree(PREVIOUS, old)  # type: ignore[attr-defined]
    env = {
        **os.environ,
        "HZ_HOME": str(tmp_path / "home"),
        "HZ_CONFIG": "",
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "HZ_FIXTURE_SOURCES": str(work),
        "HZ_USER": "priya",
    }

    def today(now: str, *args: str, **more: str) -> subprocess.CompletedProcess[str]:
        return forkhz.run(
            [HZ, *args],
            cwd=work,
            env={**env, "HZ_NOW": now, **more},
            capture_output=True,
            text=True,
            check=False,
        )

    def previous(now: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "heinzel", *args],
            cwd=work,
            env={**env, "HZ_NOW": now, "PYTHONPATH": str(old), "PYTHONDONTWRITEBYTECODE": "1"},
            capture_output=True,
            text=True,
            check=False,
        )

    monday = "2026-11-02T09:00:00Z"
    for name in ("weekly-report", "report-two"):
        assert today(monday, "heinzel", "new", "--from", f"{name}.prose.md").returncode == 0
        assert today(monday, "approve", name).returncode == 0
    assert "drafted" in today("2026-11-02T09:10:00Z", "heinzel", "wake", "weekly-report").stdout
    killed = today(
        "2026-11-02T09:20:00Z", "heinzel", "wake", "report-two", HZ_CRASH_AT="after:effect.started"
    )
    assert killed.returncode == 137
    spines = {p.parent.name: p for p in (tmp_path / "home").glob("heinzel/*/session.jsonl")}
    written = {i: p.read_bytes() for i, p in spines.items()}

    later = "2026-11-02T09:30:00Z"
    mine = json.loads(today(later, "heinzel", "list", "--json").stdout)
    theirs = previous(later, "heinzel", "list", "--json")
    assert theirs.returncode == 0, theirs.stderr
    fields = ("name", "state", "pending", "contract_version")
    assert [{f: r[f] for f in fields} for r in json.loads(theirs.stdout)] == [
        {f: r[f] for f in fields} for r in mine
    ]
    drafts = previous(later, "drafts", "--json")
    assert [d["name"] for d in json.loads(drafts.stdout)] == ["weekly-report"]
    assert previous(later, "heinzel", "verify").returncode == 0

    ticked = previous(later, "system", "daemon", "tick", "--json")
    assert ticked.returncode == 0, ticked.stderr
    (refused,) = json.loads(ticked.stdout)["errors"]
    assert refused["code"] == "HZM081"
    assert "version 2 of vocabulary hz, later than this version 1" in refused["message"]
    assert {i: p.read_bytes() for i, p in spines.items()} == written
