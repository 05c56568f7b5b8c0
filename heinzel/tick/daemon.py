"""The daemon loop: tick, wait the interval, tick again, until a stop is asked."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ledger.errors import HzError

if TYPE_CHECKING:
    from heinzel.tick.tick import TickReport

__all__ = ["run_loop"]


def run_loop(
    tick: Callable[[], TickReport],
    *,
    interval: float,
    wait: Callable[[float], bool],
    on_report: Callable[[TickReport], object],
    on_error: Callable[[HzError], None],
) -> int:
    """Tick, then ``wait(interval)`` until it answers True (a stop was asked); a tick
    that fails with a coded error is reported and the loop goes on. Returns the ticks."""
    count = 0
    while True:
        try:
            on_report(tick())
        except HzError as error:
            on_error(error)
        count += 1
        if wait(interval):
            return count
