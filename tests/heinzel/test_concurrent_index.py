"""Many `hz` processes against one home at once: no tracebacks, every turn drafted or coded.

Four Heinzelmännchen on the worked example's files; each round starts twelve real
`hz` processes together (a wake and a chat of each, `list`, `show`, a tick), and
waits for all of them (2 rounds in `make test`, ``HZ_SOAK_INDEX_ROUNDS`` in `make soak`).
The count of rounds is bounded, nothing waits for luck: a
process either succeeds or prints a coded error, never a traceback, and at the end
the index holds exactly the rows a rebuild from the spines gives.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests import forkhz

ROOT = Path(__file__).resolve().parents[2]
PRIYA = ROOT / "fixtures" / "priya"
HZ = str(Path(sys.executable).with_name("hz"))
NAMES = [f"report-{k}" for k in range(4)]
ROUNDS = int(os.environ.get("HZ_SOAK_INDEX_ROUNDS", "2"))
"""Rounds of twelve processes: 2 in `make test`, more in `make soak`."""
CODED = re.compile(r"^HZ[LMCHER]\d{3}: ", re.MULTILINE)
# the tick's own bookkeeping (when a source is next due, what a watcher saw) is not
# folded from the spines, so a rebuild does not restore it
NOT_DERIVED = {"tick_sources", "tick_seen"}


def _env(root: Path) -> dict[str, str]:
    return {
        **os.environ,
        "HZ_HOME": str(root / "home"),
        "HZ_FIXTURE_SOURCES": str(root),
        "HZ_NOW": "2026-10-30T14:05:00Z",
    }


def _hz(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return forkhz.run(
        [HZ, *args], cwd=root, env=_env(root), capture_output=True, text=True, check=False
    )


def _home(tmp_path: Path) -> Path:
    root = tmp_path / "priya"
    shutil.copytree(PRIYA, root)
    text = (root / "weekly-report.prose.md").read_text(encoding="utf-8")
    for name in NAMES:
        source = text.replace("name: weekly-report", f"name: {name}")
        source = source.replace("file:weekly-report.md", f"file:{name}.md")
        (root / f"{name}.prose.md").write_text(source, encoding="utf-8")
        shutil.copy(root / "weekly-report.md", root / f"{name}.md")
        for args in (("heinzel", "new", "--from", f"{name}.prose.md"), ("approve", name)):
            done = _hz(root, *args)
            assert done.returncode == 0, done.stderr
    return root


def _rows(index: Path) -> dict[str, list[tuple[object, ...]]]:
    with sqlite3.connect(index) as db:
        tables = [
            row[0]
            for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if not row[0].startswith("sqlite_") and row[0] not in NOT_DERIVED
        ]
        return {
            table: sorted(db.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
            for table in tables
        }


@pytest.mark.slow
def test_processes_at_once_never_trace_and_the_index_equals_a_rebuild(tmp_path: Path) -> None:
    """Twelve hz processes at a time, ROUNDS rounds: each succeeds or is coded; index == rebuild."""
    root = _home(tmp_path)
    outcomes: list[tuple[list[str], int, str]] = []
    for round_ in range(ROUNDS):
        commands: list[list[str]] = []
        for name in NAMES:
            commands.append(["heinzel", "wake", name, "--message", f"round {round_}"])
            commands.append(["heinzel", "chat", name, f"note {round_} for {name}"])
        commands += [
            ["heinzel", "list"],
            ["heinzel", "show", NAMES[round_ % len(NAMES)]],
            ["heinzel", "list", "--json"],
            ["system", "daemon", "tick"],
        ]
        running = [
            (
                args,
                forkhz.Popen(
                    [HZ, *args],
                    cwd=root,
                    env=_env(root),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                ),
            )
            for args in commands
        ]
        for args, process in running:
            _, err = process.communicate()
            outcomes.append((args, process.returncode, err))
    tracebacks = [(args, err) for args, _, err in outcomes if "Traceback" in err]
    assert tracebacks == []
    uncoded = [(a, code, err) for a, code, err in outcomes if code != 0 and not CODED.search(err)]
    assert uncoded == []
    # every turn the wakes and chats started ended drafted or with a coded error
    settled = _hz(root, "system", "daemon", "tick")
    assert settled.returncode == 0, settled.stderr
    shown = {
        name: json.loads(_hz(root, "heinzel", "show", name, "--json").stdout) for name in NAMES
    }
    turns = [turn for data in shown.values() for turn in data["turns"]]
    assert turns
    assert [t for t in turns if t["state"] == "running" or t["disposition"] == "failed"] == []
    drafted = sum(1 for t in turns if t["disposition"] == "drafted")
    wakes_ok = sum(1 for a, code, _ in outcomes if a[1] == "wake" and code == 0)
    assert drafted >= wakes_ok
    index = root / "home" / "heinzel" / "index.sqlite"
    before = _rows(index)
    rebuilt = _hz(root, "heinzel", "reindex")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert _rows(index) == before


def _opened(pid: int, path: Path) -> bool:
    """Whether process ``pid`` holds ``path`` open (it has read its state and waits for
    the lock behind it)."""
    fds = Path(f"/proc/{pid}/fd")
    try:
        return any(os.path.realpath(fd) == str(path) for fd in fds.iterdir())
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_a_pause_waiting_for_the_lock_sees_the_pause_written_before_it_and_adds_none(
    tmp_path: Path,
) -> None:
    """Two pauses at once: the one that waited for the spine's lock reads the state as of
    the lock, so it is told the Heinzelmännchen is paused (HZH050, exit 1) and the spine
    holds one ``heinzel.paused`` line, not two."""
    from ledger.spine import Spine, read_events

    root = _home(tmp_path)
    listed = json.loads(_hz(root, "heinzel", "list", "--json").stdout)
    hid = next(str(row["id"]) for row in listed if row["name"] == NAMES[0])
    session = root / "home" / "heinzel" / hid
    lock = (session / "lock").resolve()
    at = datetime(2026, 10, 30, 14, 5, tzinfo=UTC)  # the home's HZ_NOW
    held = Spine.open(session, clock=lambda: at, lock_timeout=5)
    try:
        waiting = subprocess.Popen(
            [HZ, "heinzel", "pause", NAMES[0]],
            cwd=root,
            env=_env(root),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        while not _opened(waiting.pid, lock):  # bounded by the process's own lock timeout
            assert waiting.poll() is None, waiting.communicate()
            os.sched_yield()
        held.append("heinzel.paused", {})  # the other pause, written while it waits
    finally:
        held.close()
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 1, (out, err)
    assert err.startswith("HZH050: cannot pause"), err
    kinds = [e.kind for e in read_events(session / "session.jsonl")]
    assert kinds.count("heinzel.paused") == 1, kinds
