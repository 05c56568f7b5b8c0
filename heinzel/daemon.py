"""What the tick, the loop and the user's verbs share: the daemon loop, whether another
process holds a spine, and ending an open turn abandoned."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from ledger.errors import HzError
from machines.fold import fold
from machines.runner import Settings as MachineSettings
from machines.runner import TurnRun
from machines.spine_journal import SpineIndex, SpineJournal

if TYPE_CHECKING:
    from heinzel.service import Service
    from heinzel.tick import TickReport

__all__ = ["abandon_turn", "lock_held", "run_loop"]


async def _no_wait(seconds: float) -> None:
    """Ending a turn performs no effect, so nothing is ever retried or waited for."""


def abandon_turn(service: Service, heinzel_id: str, turn: str, reason: str) -> None:
    """End an open turn (running in no process, or waiting) ``abandoned`` with ``reason``
    (``stopped``, ``superseded``), under the spine's lock."""
    with service.open_spine(heinzel_id) as spine:
        journal = SpineJournal(spine, SpineIndex.scan(spine.path))
        settings = MachineSettings(clock=service.clock, sleep=_no_wait)
        TurnRun(journal, None, None, settings, fold(turn, journal.turn_events(turn))).abandon(
            reason
        )


def lock_held(path: os.PathLike[str]) -> bool:
    """Whether another process holds the flock on ``path`` (a missing file: no)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def run_loop(
    tick: Callable[[], TickReport],
    *,
    interval: float,
    wait: Callable[[float], bool],
    on_report: Callable[[TickReport], None],
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
