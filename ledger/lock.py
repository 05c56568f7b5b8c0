"""One writer per spine: an exclusive flock on ``<directory>/lock``, waited for a bounded time.

The lock is an open file description holding ``flock(LOCK_EX)``; the kernel
releases it when the descriptor closes or the process dies (a SIGKILLed writer
never leaves a stale lock). A second writer polls with ``LOCK_NB`` every
`POLL_SECONDS` for at most ``timeout`` seconds, counting polls of an injected
``sleep`` rather than reading a clock, and then gets HZL010.
"""

from __future__ import annotations

import errno
import fcntl
import math
import os
import stat
from collections.abc import Callable
from pathlib import Path

from ledger.errors import LedgerError
from ledger.files import FILE_MODE

__all__ = ["POLL_SECONDS", "Sleep", "take_lock"]

POLL_SECONDS = 0.05
Sleep = Callable[[float], None]


def take_lock(path: Path, timeout: float, sleep: Sleep) -> int:
    """The descriptor of ``path`` (created 0600) holding an exclusive flock."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise LedgerError(
                "HZL001",
                f"{path} is a symlink, not a file hz wrote; refusing to follow it",
                "move it away; hz creates its own lock file",
            ) from error
        raise LedgerError(
            "HZL002",
            f"cannot open the lock {path}: {error.strerror or error}",
            "check the disk (space, permissions, a read-only mount) and retry",
        ) from error
    if stat.S_IMODE(os.fstat(fd).st_mode) != FILE_MODE:
        os.fchmod(fd, FILE_MODE)  # only when needed: a chmod changes the file's ctime
    polls = max(0, math.ceil(timeout / POLL_SECONDS))
    for attempt in range(polls + 1):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if attempt < polls:
                sleep(POLL_SECONDS)
            continue
        return fd
    os.close(fd)
    raise LedgerError(
        "HZL010",
        f"the spine in {path.parent} has another writer (waited {timeout:g} s for its lock)",
        "another hz process is appending to it; retry when it is done, or raise lock_timeout",
    )
