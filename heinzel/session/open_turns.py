"""Open turns seen from outside them: whether another process holds a spine, ending an
open turn abandoned (``hz heinzel stop``, a superseded wait, the tick's clean-up), and what
became of the chats steered into turns (`steer_fates`, for the tick and the delivery)."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterable
from typing import Any

from heinzel.session.sessions import Sessions

__all__ = ["abandon_turn", "lock_held", "steer_fates"]


async def _no_wait(seconds: float) -> None:
    """Ending a turn performs no effect, so nothing is ever retried or waited for."""


def abandon_turn(sessions: Sessions, heinzel_id: str, turn: str, reason: str) -> list[str]:
    """End an open turn (running in no process, or waiting) ``abandoned`` with ``reason``
    (``stopped``, ``superseded``), under the spine's lock. The request ids of the chats it
    was steered with that no model request received (`hz heinzel chat` steers into a turn a
    dead process left): the caller runs them, as a live turn's host runs its leftovers."""
    from machines.fold import fold
    from machines.runner import Settings as MachineSettings
    from machines.runner import TurnRun
    from machines.spine_journal import SpineIndex, SpineJournal

    with sessions.open_spine(heinzel_id) as spine:
        journal = SpineJournal(spine, SpineIndex.scan(spine.path))
        settings = MachineSettings(clock=sessions.clock, sleep=_no_wait)
        state = fold(turn, journal.turn_events(turn))
        left = [str(s.get("request_id")) for s in state.steered]
        TurnRun(journal, None, None, settings, state).abandon(reason)
    return left


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


def steer_fates(events: Iterable[Any]) -> dict[str, str]:
    """Each steered request id's fate: ``received`` (a model request came after its steer
    in that turn), ``open`` (its turn has not ended), else ``left`` (its turn ended first)."""
    fates: dict[str, str] = {}
    waiting: dict[str, list[str]] = {}
    rank = {"left": 0, "open": 1, "received": 2}
    for event in events:
        turn = str(event.turn)
        if event.kind == "turn.steered":
            rid = str(event.data.get("request_id"))
            waiting.setdefault(turn, []).append(rid)
            fates[rid] = max(fates.get(rid, "open"), "open", key=rank.__getitem__)
        elif event.kind == "model.request":
            for rid in waiting.pop(turn, []):
                fates[rid] = "received"
        elif event.kind in ("turn.finished", "turn.skipped"):
            for rid in waiting.pop(turn, []):
                if fates.get(rid) == "open":
                    fates[rid] = "left"
    return fates
