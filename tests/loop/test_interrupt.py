"""Ctrl-C during a wake: the turn stops at its next step and the command says what next."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

from tests.loop.conftest import Hz

SCRIPT = Path(__file__).with_name("interrupted_wake.py")
ROOT = Path(__file__).resolve().parents[2]


def wait_ready(process: subprocess.Popen[str], path: Path) -> None:
    """Until the child wrote to the FIFO ``path``; its output if it ended first."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        while not os.read(fd, 100):
            if process.poll() is not None:
                raise AssertionError(process.communicate())
            select.select([fd], [], [], 0.1)
    finally:
        os.close(fd)


def test_sigint_stops_the_turn_at_its_next_step(
    approved: Hz, hz_env: dict[str, str], folder: Path, tmp_path: Path
) -> None:
    """SIGINT mid-request: exit 1, the turn abandoned stopped, the one command named, and
    the Heinzelmännchen asleep so that command works."""
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
    process.send_signal(signal.SIGINT)
    with (sync / "go").open("w") as go:
        go.write("go\n")
    out, err = process.communicate(timeout=120)
    assert process.returncode == 1, (out, err)
    assert "HZH361: SIGINT: turn tn-" in err and "ended abandoned (stopped)" in err
    assert "hint: `hz heinzel wake notes-digest` starts a new turn" in err
    assert "Aborted!" not in err and "Traceback" not in err
    shown = json.loads(approved("heinzel", "show", "notes-digest", "--json").out)
    assert shown["activity"] == "asleep"
    assert [t["reason"] for t in shown["turns"]] == ["stopped"]
    assert approved("heinzel", "wake", "notes-digest").code == 0
