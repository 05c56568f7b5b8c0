"""`machines.loading`: large imports with the collector paused, then frozen once."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.waits import HANG

SCRIPT = """
import gc, json
from machines.loading import loading

seen = {}
with loading():
    seen["paused"] = gc.isenabled()
    import colorsys  # a module this process has not loaded
seen["after_load"] = [gc.isenabled(), gc.get_freeze_count() > 0]
frozen = gc.get_freeze_count()
with loading():
    import colorsys  # loaded already: nothing new
seen["after_nothing"] = [gc.isenabled(), gc.get_freeze_count() == frozen]
gc.disable()
with loading():
    import wave
seen["left_off"] = gc.isenabled()
print(json.dumps(seen))
"""


def test_loading_pauses_the_collector_and_freezes_only_when_modules_load() -> None:
    """The collector is off inside the block and back on after; a block that imported a
    module froze what existed, one that imported nothing froze nothing, and a collector the
    caller had switched off stays off (run in its own process: freezing is per process)."""
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True, timeout=HANG
    )
    seen = json.loads(done.stdout)
    assert seen == {
        "paused": False,
        "after_load": [True, True],
        "after_nothing": [True, True],
        "left_off": False,
    }
