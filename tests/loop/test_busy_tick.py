"""A tick that finds a turn running in another process (issue 13, item 6; ADR 0049
statement 14): its wakes are handed to that turn through the inbox, through `hz`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from heinzel.store.home import Home
from heinzel.store.inbox import Inbox
from tests.loop.conftest import Hz
from tests.loop.test_interrupt import ROOT, SCRIPT, wait_ready

HOLD = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""


def test_a_tick_hands_its_wake_over_and_a_later_tick_runs_it_when_nobody_took_it(
    approved: Hz, hz_env: dict[str, str]
) -> None:
    """With the spine lock held by a process that runs no turn, the tick exits 0 at once
    (no HZL010) handing the wake to the inbox; nobody takes it, so the next tick, the lock
    free, runs it once, and a third tick runs nothing."""
    shown = json.loads(approved("heinzel", "show", "notes-digest", "--json").out)
    home = Home(Path(hz_env["HZ_HOME"]))
    lock = home.session_dir(shown["id"]) / "lock"
    with subprocess.Popen(
        [sys.executable, "-c", HOLD, str(lock)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as holder:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline() == "held\n"
        busy = approved("system", "daemon", "tick")
        again = approved("system", "daemon", "tick", "--json")
        holder.stdin.close()
    assert busy.code == 0, busy.out + busy.err
    assert "notes-digest: a turn runs in another process; source-changed handed to it" in busy.out
    assert "HZL010" not in busy.out + busy.err
    handed = Inbox(home, shown["id"]).pending("requested")
    assert len(handed) == 1  # the second busy tick handed the same wake: still one request
    assert json.loads(again.out)["handed"][0]["causes"] == ["source-changed"]
    ran = approved("system", "daemon", "tick")
    assert ran.code == 0, ran.out + ran.err
    assert "notes-digest: source-changed -> drafted" in ran.out
    assert Inbox(home, shown["id"]).pending() == []
    quiet = approved("system", "daemon", "tick")
    assert "0 woken" in quiet.out, quiet.out


def test_the_running_turn_takes_the_handed_wake_as_its_follow_up(
    approved: Hz, hz_env: dict[str, str], folder: Path, tmp_path: Path
) -> None:
    """A tick while a wake's model request is under way in another process hands its
    source-changed wake over; that process records turn.requested and runs it as one
    follow-up turn after its own, and the next tick runs nothing again."""
    sync = tmp_path / "sync"
    sync.mkdir()
    os.mkfifo(sync / "ready")
    os.mkfifo(sync / "go")
    config = tmp_path / "hz.toml"
    config.write_text(
        '[heinzel.prices]\n"function:respond:" = {input = 1.0, output = 1.0}\n',
        encoding="utf-8",
    )
    env = {
        **hz_env,
        "HZ_NOW": "2026-10-30T15:00:00Z",
        "PYTHONPATH": str(ROOT),
        "HZ_CONFIG": str(config),
    }
    process = subprocess.Popen(
        [sys.executable, str(SCRIPT), str(sync)],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_ready(process, sync / "ready")
    tick = approved("system", "daemon", "tick")
    with (sync / "go").open("w") as go:
        go.write("go\n")
    out, err = process.communicate(timeout=120)
    assert tick.code == 0, tick.out + tick.err
    assert "source-changed handed to it" in tick.out
    assert process.returncode == 0, (out, err)
    shown = json.loads(approved("heinzel", "show", "notes-digest", "--json").out)
    assert [(t["cause"], t["state"]) for t in shown["turns"]] == [
        ("asked", "finished"),
        ("source-changed", "finished"),
    ]
    spine = Home(Path(hz_env["HZ_HOME"])).spine_path(shown["id"]).read_text(encoding="utf-8")
    requested = [json.loads(line) for line in spine.splitlines() if '"turn.requested"' in line]
    assert [r["data"]["cause"] for r in requested] == ["source-changed"]
    quiet = approved("system", "daemon", "tick")
    assert quiet.code == 0 and "0 woken" in quiet.out, quiet.out
