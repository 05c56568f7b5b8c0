"""A future ``HZ_NOW`` (a demo, a test, a try-out) does not freeze the real clock's
polling afterwards: a source whose next check lies further off than its recheck was set
by a clock ahead of this one, and the next real tick polls it."""

from __future__ import annotations

import re
from pathlib import Path

from tests.loop.conftest import Hz


def test_a_tick_after_a_future_hz_now_still_polls(hz: Hz, folder: Path) -> None:
    """Ticked once at 2031 (the source polled, next check 10 min after that), the tick at
    the real clock polls the source again, as it would had the 2031 tick never been."""
    text = (folder / "digest.prose.md").read_text(encoding="utf-8")
    rechecked = text.replace("args: {path: notes.txt}}", "args: {path: notes.txt}, recheck: 10m}")
    assert rechecked != text
    (folder / "digest.prose.md").write_text(rechecked, encoding="utf-8")
    assert hz("heinzel", "new", "--from", "digest.prose.md").code == 0
    assert hz("approve", "notes-digest").code == 0
    future = hz("system", "daemon", "tick", env={"HZ_NOW": "2031-01-01T00:00:00Z"})
    assert future.code == 0 and ", 1 fetched" in future.out, future.out + future.err
    real = hz("system", "daemon", "tick", env={"HZ_NOW": ""})  # the wall clock
    assert real.code == 0, real.err
    assert re.search(r"tick at 20\d\d-.*: \d+ woken, 1 fetched", real.out), real.out
