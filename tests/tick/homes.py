"""A home of several approved Heinzelmännchen on the worked example's files, for tests that
then drive real `hz` processes against it (the set-up runs in-process, to stay quick)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from heinzel.config import load_settings
from heinzel.service import Service
from heinzel.store.home import Home
from ledger.event import Event
from ledger.reading import read_events
from machines.stores.journal import wake_keys
from tests import forkhz

ROOT = Path(__file__).resolve().parents[2]
PRIYA = ROOT / "fixtures" / "priya"
HZ = str(Path(sys.executable).with_name("hz"))
CREATED = datetime(2026, 10, 30, 14, 5, tzinfo=UTC)
FRIDAY = "2026-11-06T15:00:00Z"
"""A time after everyone's next Friday slot (15:00 Berlin on 6 November)."""
CODED = re.compile(r"^HZ[LMCHER]\d{3}: ", re.MULTILINE)


def make_home(tmp_path: Path, count: int) -> tuple[Path, list[str]]:
    """``count`` Heinzelmännchen ``report-<k>`` created and approved; the root and the ids."""
    root = tmp_path / "priya"
    shutil.copytree(PRIYA, root)
    text = (root / "weekly-report.prose.md").read_text(encoding="utf-8")
    loaded = load_settings(env={}, cwd=root, site=None, user=None, data_dir=root / "home")
    service = Service(Home(root / "home"), lambda: CREATED, loaded.settings, owner="priya")
    ids = []
    for k in range(count):
        name = f"report-{k}"
        source = text.replace("name: weekly-report", f"name: {name}")
        source = source.replace("file:weekly-report.md", f"file:{name}.md")
        (root / f"{name}.prose.md").write_text(source, encoding="utf-8")
        shutil.copy(root / "weekly-report.md", root / f"{name}.md")
        row = service.create_from_files([str(root / f"{name}.prose.md")])[0]
        service.approve(name)
        ids.append(str(row["id"]))
    service.index.close()
    return root, ids


def env(root: Path, now: str = FRIDAY, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "HZ_HOME": str(root / "home"),
        "HZ_FIXTURE_SOURCES": str(root),
        "HZ_NOW": now,
        **extra,
    }


def hz(root: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    """Run ``hz args`` against the home the way a person would."""
    return forkhz.run(
        [HZ, *args], cwd=root, env=env(root, **extra), capture_output=True, text=True, check=False
    )


def turns(root: Path, name: str) -> list[dict[str, Any]]:
    """The turns `hz heinzel show NAME --json` lists."""
    done = hz(root, "heinzel", "show", name, "--json")
    assert done.returncode == 0, done.stderr
    listed: list[dict[str, Any]] = json.loads(done.stdout)["turns"]
    return listed


def tick(root: Path, **extra: str) -> dict[str, Any]:
    """One `hz system daemon tick --json`, its report; never a traceback."""
    done = hz(root, "system", "daemon", "tick", "--json", **extra)
    assert "Traceback" not in done.stderr, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def chat_claims(root: Path, heinzel: str) -> Counter[str]:
    """Per chat request id, the spine lines that claim its delivery: each ``turn.steered``
    naming it and each ``turn.started`` (or a lone ``turn.skipped``) carrying its key
    ``<id>@<request id>`` (one message, one turn: exactly one per chat,
    docs/turns-in-hz.md)."""
    return claims_in(read_events(Home(root / "home").spine_path(heinzel)), heinzel)


def claims_in(events: Iterable[Event], heinzel: str) -> Counter[str]:
    """`chat_claims` over ``events`` of ``heinzel``'s spine."""
    found: Counter[str] = Counter()
    for event in events:
        if event.kind == "turn.steered":
            found[str(event.data.get("request_id"))] += 1
        elif event.kind in ("turn.started", "turn.skipped"):
            for key in wake_keys(event.data, event.key):
                owner, _, rid = key.partition("@")
                if owner == heinzel and rid.startswith("rq-"):
                    found[rid] += 1
    return found
