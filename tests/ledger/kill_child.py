"""The child of the kill tests: appends to a spine until it is killed.

After each append returns (durable), it writes ``<seq> <n>`` and a newline to
its output descriptor, so the parent knows exactly which appends were
acknowledged. Run as a script (``python kill_child.py DIR SEED``, acks on
stdout) or forked from the test process (`run`).
"""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from pathlib import Path

from ledger.spine import Spine

KIND = "kill.tick"


def payload(seed: int, n: int) -> dict[str, object]:
    """The data of the n-th append of a child with this seed (sizes vary by seed)."""
    return {"n": n, "seed": seed, "pad": "p" * ((seed * 7919 + n * 104729) % 180)}


def run(directory: Path, seed: int, out: int) -> None:
    """Append forever, acknowledging each durable append on ``out``."""
    spine = Spine.open(
        directory, clock=lambda: datetime(2026, 10, 30, 15, 0, tzinfo=UTC), lock_timeout=5
    )
    n = 0
    while True:
        n += 1
        event = spine.append(KIND, payload(seed, n))
        os.write(out, b"%d %d\n" % (event.seq, n))


if __name__ == "__main__":
    run(Path(sys.argv[1]), int(sys.argv[2]), sys.stdout.fileno())
