"""A tick run as a real process whose turn host dies as the first turn would start.

Usage: ``python killed_tick.py HOME CONTRACT NOW``. It creates and approves the
Heinzelmännchen of CONTRACT in HOME when it is not there yet, then ticks at NOW with the
worked example's sources; the host ``os._exit(137)``s when asked to run a wake, i.e. after
the tick staged every input and before any ``turn.started``. It prints the fetch count.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path

from heinzel.capabilities.fixture_sources import fixture_sources
from heinzel.clock import fixed_clock
from heinzel.config import load_settings
from heinzel.service import Service
from heinzel.store.home import Home
from heinzel.store.sources import TickFetch
from heinzel.tick import Tick
from machines.keys import Wake

PRIYA = Path(__file__).resolve().parents[2] / "fixtures" / "priya"


class Dying:
    """A turn host that dies before its first line."""

    def run_wakes(
        self,
        heinzel_id: str,
        wakes: Sequence[Wake],
        *,
        adapters: Mapping[str, object],
        staged: TickFetch | None = None,
    ) -> list[object]:
        os._exit(137)

    def resume_turn(
        self, heinzel_id: str, turn: str, woken_by: str, *, adapters: Mapping[str, object]
    ) -> None:
        os._exit(137)


def main(home: str, contract: str, now: str) -> None:
    root = Path(home)
    clock = fixed_clock(datetime.fromisoformat(now))
    settings = load_settings(env={}, cwd=root, site=None, user=None, data_dir=root).settings
    service = Service(Home(root), clock, settings, owner="priya")
    if not service.listing():
        row = service.create_from_files([contract])[0]
        service.approve(row["id"])
    report = Tick(service, Dying(), fixture_sources(PRIYA), sleep=lambda s: None).run()
    print(report.fetches)


if __name__ == "__main__":
    main(*sys.argv[1:4])
