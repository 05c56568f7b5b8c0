"""The fsyncs a person's `hz heinzel wake` makes: the inputs staged only when they moved,
the request in the inbox only when it carries a message or another process holds the lock.

Counted on the real `hz` executable with strace (skipped where strace cannot trace).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.tick.homes import HZ, env, make_home

STRACE = shutil.which("strace")


def fsyncs(root: Path, now: str, *args: str) -> list[str]:
    """The files and folders one real `hz heinzel wake report-0` fsynced, in order."""
    return traced(root, now, "heinzel", "wake", "report-0", *args)[0]


def traced(root: Path, now: str, *argv: str) -> tuple[list[str], str]:
    """The files and folders one real `hz ARGV` fsynced (fsync and fdatasync, SQLite's
    included), in order, and what it printed."""
    log = root / "strace.log"
    trace = [STRACE or "strace", "-f", "-y", "-e", "trace=fsync,fdatasync", "-o", str(log)]
    done = subprocess.run(
        [*trace, HZ, *argv],
        cwd=root,
        env=env(root, now=now),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found = []
    for line in log.read_text(encoding="utf-8").splitlines():
        if "sync(" in line and "<" in line:
            found.append(line.split("<", 1)[1].split(">", 1)[0])
    return found, done.stdout


@pytest.fixture
def home(tmp_path: Path) -> Path:
    if STRACE is None:
        pytest.skip("strace is not installed")
    probe = subprocess.run([STRACE, "-o", "/dev/null", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip("strace cannot trace here")
    root, _ = make_home(tmp_path, 1)
    return root


def test_second_wake_restages_nothing_and_writes_no_request(home: Path) -> None:
    """A wake whose inputs did not move fsyncs no source cache entry and, with no message
    and the lock free, no inbox request: the spine, the draft and the body alone (the
    fixture sources answer the same at 17:00 and 18:00; only ``as_of`` moves on)."""
    fsyncs(home, "2026-11-06T17:00:00Z")
    second = fsyncs(home, "2026-11-06T18:00:00Z")
    assert [p for p in second if "/sources" in p] == []
    assert [p for p in second if "/inbox" in p] == []
    assert len(second) <= 8, second


def test_a_first_wake_fsyncs_what_a_later_one_does(home: Path) -> None:
    """The first wake of a Heinzelmännchen creates no folder (its ``turns/`` and the home's
    ``sources/`` were made when it was created, the record of its document's path when it
    was approved) and stages its inputs without an fsync (a power cut that takes an entry
    costs a refetch): the same 8 as any later wake, by file. It made 19."""
    first = fsyncs(home, "2026-11-06T17:00:00Z")
    heinzel = home / "home" / "heinzel"
    (folder,) = heinzel.glob("hz-*")
    kinds = {
        str(folder / "session.jsonl"): "spine",
        str(folder / "turns"): "turns/",
        str(home): "its folder",
    }
    named = [
        kinds.get(path)
        or ("body" if path.startswith(str(folder / "turns" / "tn-")) else None)
        or ("draft" if path.startswith(str(home / ".report-0.md.tmp-")) else path)
        for path in first
    ]
    assert sorted(named) == sorted(["spine"] * 4 + ["body", "turns/", "draft", "its folder"]), first


def test_a_message_still_goes_to_the_inbox_first(home: Path) -> None:
    """A wake with a message writes it to the inbox (durable before the turn names it),
    and the turn reads it from there."""
    fsyncs(home, "2026-11-06T17:00:00Z")
    second = fsyncs(home, "2026-11-06T18:00:00Z", "--message", "mention the launch")
    assert any(p.endswith("/inbox") for p in second)
    (request,) = (home / "home" / "heinzel").glob("hz-*/inbox/rq-*.json")
    assert json.loads(request.read_text(encoding="utf-8"))["message"] == "mention the launch"


def test_a_tick_that_finds_nothing_moved_fsyncs_nothing(home: Path) -> None:
    """A tick whose inputs' recheck is due and whose inputs did not move writes one row
    (the sources' next recheck) to the index and fsyncs nothing: the index is closed
    keeping its WAL, so neither the close's checkpoint (the WAL and the database file)
    nor the next write's new WAL (its header and its folder) costs an fsync. It made 4,
    all SQLite's."""
    traced(home, "2026-10-30T14:10:00Z", "system", "daemon", "tick", "--json")  # first poll
    second, out = traced(home, "2026-10-30T15:20:00Z", "system", "daemon", "tick", "--json")
    report = json.loads(out)
    assert report["fetches"] >= 1 and report["woken"] == [] and report["errors"] == []
    assert second == []
    assert (home / "home" / "heinzel" / "index.sqlite-wal").is_file()
