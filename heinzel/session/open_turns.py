"""Open turns seen from outside them: whether another process holds a spine, ending an
open turn abandoned (``hz heinzel stop``, a superseded wait, the tick's clean-up)."""

from __future__ import annotations

import fcntl
import os

from heinzel.session.sessions import Sessions

__all__ = ["abandon_turn", "lock_held"]


async def _no_wait(seconds: float) -> None:
    """Ending a turn performs no effect, so nothing is ever retried or waited for."""


def abandon_turn(sessions: Sessions, heinzel_id: str, turn: str, reason: str) -> None:
    """End an open turn (running in no process, or waiting) ``abandoned`` with ``reason``
    (``stopped``, ``superseded``), under the spine's lock. Chats queued for it stay in the
    inbox for the tick; one it was steered with went into it (one message, one turn)."""
    from machines.core.fold import fold
    from machines.core.runner import Settings as MachineSettings
    from machines.core.runner import TurnRun
    from machines.stores.spine_journal import SpineIndex, SpineJournal

    with sessions.open_spine(heinzel_id) as spine:
        journal = SpineJournal(spine, SpineIndex.scan(spine.path))
        settings = MachineSettings(clock=sessions.clock, sleep=_no_wait)
        state = fold(turn, journal.turn_events(turn))
        TurnRun(journal, None, None, settings, state).abandon(reason)


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
