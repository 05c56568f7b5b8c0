"""Homes written by real earlier versions of hz (fixtures/homes/, made by
fixtures/homes/make_homes.py from the commits its ``made-by.json`` names) opened by
today's hz: every command a person runs works, the result verifies, and no line an
earlier hz wrote is rewritten (docs/spine.md, "Versions: what may change and how")."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from machines.vocabulary import VOCABULARY_VERSION
from tests import forkhz

ROOT = Path(__file__).resolve().parents[2]
HOMES = ROOT / "fixtures" / "homes"
HZ = str(Path(sys.executable).with_name("hz"))
LABELS = sorted(p.name for p in HOMES.iterdir() if (p / "made-by.json").is_file())


@contextmanager
def placed(label: str) -> Iterator[Path]:
    """The golden home and its work folder put back where the old hz wrote them (its
    spines name that folder), private as hz keeps a home; one test at a time holds it."""
    made = json.loads((HOMES / label / "made-by.json").read_text(encoding="utf-8"))
    where = Path(made["path"])
    where.parent.mkdir(parents=True, exist_ok=True)
    with (where.parent / f"{label}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        shutil.rmtree(where, ignore_errors=True)
        shutil.copytree(HOMES / label, where, ignore=shutil.ignore_patterns("made-by.json"))
        for folder, _dirs, files in os.walk(where / "home"):
            os.chmod(folder, 0o700)
            for name in files:
                os.chmod(Path(folder) / name, 0o600)
        try:
            yield where
        finally:
            shutil.rmtree(where, ignore_errors=True)


def runner(where: Path) -> object:
    def hz(now: str, *args: str) -> subprocess.CompletedProcess[str]:
        env = {
            **os.environ,
            "HZ_HOME": str(where / "home"),
            "HZ_NOW": now,
            "HZ_CONFIG": "",
            "XDG_CONFIG_HOME": str(where / "xdg"),
            "HZ_FIXTURE_SOURCES": str(where / "work"),
            "HZ_USER": "priya",
        }
        return forkhz.run(
            [HZ, *args], cwd=where / "work", env=env, capture_output=True, text=True, check=False
        )

    return hz


def spines(where: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in sorted((where / "home").glob("heinzel/*/session.jsonl"))}


@pytest.mark.parametrize("label", LABELS)
def test_an_earlier_home_opens_and_goes_on(label: str) -> None:
    """list, show, lessons and verify read it; answer (the question the old hz left
    waiting), approve (its pending draft), retry, the tick and wake write to it; every
    spine still verifies, holds every earlier line byte for byte, and its new turns pin
    this vocabulary."""
    with placed(label) as where:
        hz = runner(where)
        before = spines(where)
        now = "2026-11-09T10:00:00Z"

        listed = hz(now, "heinzel", "list", "--json")
        assert listed.returncode == 0, listed.stderr
        rows = {r["name"]: r for r in json.loads(listed.stdout)}
        assert sorted(rows) == ["incidents", "weekly-report"]
        assert [n["reason"] for n in rows["incidents"]["notices"]] == ["question"]
        shown = hz(now, "heinzel", "show", "incidents")
        assert "asks: Which incidents belong in it?" in shown.stdout, shown.stderr
        assert hz(now, "heinzel", "show", "weekly-report").returncode == 0
        lessons = hz(now, "heinzel", "lessons", "weekly-report")
        assert "leave out lines like" in lessons.stdout, lessons.stdout
        assert hz(now, "heinzel", "verify").returncode == 0

        answered = hz(now, "heinzel", "answer", "incidents", "only the big ones")
        assert answered.returncode == 0, answered.stderr
        assert "drafted" in answered.stdout
        (draft,) = [
            d
            for d in json.loads(hz(now, "drafts", "--json").stdout)
            if d["name"] == "weekly-report"
        ]
        approved = hz(now, "approve", draft["key"])
        assert approved.returncode == 0, approved.stderr
        retried = hz(now, "heinzel", "retry", "incidents", "shorter, please")
        assert retried.returncode == 0, retried.stderr
        ticked = hz("2026-11-09T11:00:00Z", "system", "daemon", "tick", "--json")
        assert ticked.returncode == 0, ticked.stderr
        assert json.loads(ticked.stdout)["errors"] == []
        woken = hz("2026-11-09T11:10:00Z", "heinzel", "wake", "weekly-report")
        assert woken.returncode == 0, woken.stderr
        assert "drafted" in woken.stdout

        verified = hz(now, "heinzel", "verify", "--json")
        assert verified.returncode == 0, verified.stdout
        after = spines(where)
        for path, old in before.items():
            assert after[path][: len(old)] == old, path  # no earlier line rewritten
            assert len(after[path]) > len(old), path
            new = [json.loads(line) for line in after[path][len(old) :].splitlines()]
            pins = [e["data"]["pins"] for e in new if e["kind"] == "turn.started"]
            assert pins, path
            assert {p["vocabulary"] for p in pins} == {VOCABULARY_VERSION}
