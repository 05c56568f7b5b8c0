"""A tick that finds a turn running in another process (issue 13, item 6), through `hz`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from heinzel.store.home import Home
from tests.loop.conftest import Hz

HOLD = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""


def test_a_tick_passes_over_a_busy_one_and_wakes_it_next_time(
    approved: Hz, hz_env: dict[str, str]
) -> None:
    """With the spine lock held by another process the tick exits 0 at once naming it
    (no HZL010); the wake stays due and the next tick, the lock free, runs it."""
    shown = json.loads(approved("heinzel", "show", "notes-digest", "--json").out)
    lock = Home(Path(hz_env["HZ_HOME"])).session_dir(shown["id"]) / "lock"
    with subprocess.Popen(
        [sys.executable, "-c", HOLD, str(lock)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as holder:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline() == "held\n"
        busy = approved("system", "daemon", "tick")
        holder.stdin.close()
    assert busy.code == 0, busy.out + busy.err
    assert "notes-digest: a turn runs in another process" in busy.out
    assert "source-changed wait for the next tick" in busy.out
    assert "HZL010" not in busy.out + busy.err
    again = approved("system", "daemon", "tick")
    assert again.code == 0, again.out + again.err
    assert "notes-digest: source-changed -> drafted" in again.out
