"""``hz heinzel migrate`` (ADR 0049 plan step 2): every contract in use becomes a
Heinzelmännchen at v1, asleep; what does not compile is listed with its code; twice
changes nothing."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests import forkhz

ROOT = Path(__file__).resolve().parents[2]
CONTRACTS = ROOT / "fixtures" / "contracts"
HZ = str(Path(sys.executable).with_name("hz"))


def hz(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "HZ_HOME": str(folder / "home"),
        "HZ_NOW": "2026-11-02T09:00:00Z",
        "HZ_CONFIG": "",
        "XDG_CONFIG_HOME": str(folder / "xdg"),
    }
    return forkhz.run([HZ, *args], cwd=folder, env=env, capture_output=True, text=True, check=False)


def files(home: Path) -> dict[str, str]:
    """Every file of the home but the index (derived, its WAL moves), by its hash."""
    return {
        str(p.relative_to(home)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(home.rglob("*"))
        if p.is_file() and not p.name.startswith("index.sqlite")
    }


def test_migrate_twice_gives_the_same_bytes(tmp_path: Path) -> None:
    """The good contracts and the OpenProse corpus: --dry-run writes nothing (no home); the
    run makes the three good ones v1, asleep, and lists each OpenProse file that is not a
    responsibility hz can run with its code (exit 1); the second run leaves every file of
    the home as it was."""
    shutil.copytree(CONTRACTS / "good", tmp_path / "good")
    shutil.copytree(CONTRACTS / "openprose", tmp_path / "openprose")

    dry = hz(tmp_path, "heinzel", "migrate", "good", "openprose", "--dry-run", "--json")
    assert dry.returncode == 1, dry.stderr
    assert not (tmp_path / "home").exists()
    planned = json.loads(dry.stdout)
    assert (planned["would"], planned["skipped"], planned["migrated"]) == (3, 4, 0)

    first = hz(tmp_path, "heinzel", "migrate", "good", "openprose")
    assert first.returncode == 1, first.stderr
    assert "migrated  weekly-report: v1, asleep" in first.stdout
    skipped = [line for line in first.stdout.splitlines() if line.startswith("skipped")]
    assert [line.split(": ")[1] for line in skipped] == ["HZC010", "HZC005", "HZC010", "HZC010"]
    assert "openprose/inbox-gateway.prose.md: HZC010: an OpenProse gateway" in skipped[0]
    listed = json.loads(hz(tmp_path, "heinzel", "list", "--json").stdout)
    assert sorted((r["name"], r["state"], r["contract_version"]) for r in listed) == [
        ("release-notes", "asleep", 1),
        ("standup-notes", "asleep", 1),
        ("weekly-report", "asleep", 1),
    ]
    assert [
        r["name"]
        for r in json.loads(
            hz(
                tmp_path, "heinzel", "list", "--artifact", "doc:checkout/weekly-report", "--json"
            ).stdout
        )
    ] == ["weekly-report"]
    before = files(tmp_path / "home")

    again = hz(tmp_path, "heinzel", "migrate", "good", "openprose", "--json")
    assert again.returncode == 1
    assert json.loads(again.stdout)["already"] == 3
    assert json.loads(again.stdout)["migrated"] == 0
    assert files(tmp_path / "home") == before
    assert hz(tmp_path, "heinzel", "verify").returncode == 0


def test_a_name_taken_by_another_folder_and_a_missing_path_are_coded(tmp_path: Path) -> None:
    """The same name from another folder is skipped (HZH072), the first one stays; a path
    that is not there is HZH461 and nothing is written."""
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        shutil.copy(CONTRACTS / "good" / "weekly-report.prose.md", tmp_path / folder)
    missing = hz(tmp_path, "heinzel", "migrate", "a", "nowhere")
    assert missing.returncode == 1
    assert missing.stderr.startswith("HZH461: nowhere: no such file or folder")
    assert not (tmp_path / "home").exists()
    done = json.loads(hz(tmp_path, "heinzel", "migrate", "a", "b", "--json").stdout)
    assert [(f["result"], f.get("code")) for f in done["files"]] == [
        ("migrated", None),
        ("skipped", "HZH072"),
    ]
