"""One writer per spine: an exclusive flock on ``<directory>/lock``, waited for a bounded time.

The lock is an open file description holding ``flock(LOCK_EX)``; the kernel
releases it when the descriptor closes or the process dies (a SIGKILLed writer
never leaves a stale lock). A second writer polls with ``LOCK_NB`` every
`POLL_SECONDS` for at most ``timeout`` seconds, counting polls of an injected
``sleep`` rather than reading a clock, and then gets HZL010.

HZL010 names what holds the spine (`holder`): the process the kernel lists for the lock
file's flock in ``/proc/locks``, with its command line: ``process 4711 (uvicorn app:app
--workers 2)``. Nothing is written for it; where ``/proc`` is missing it says
``another process``.
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

__all__ = ["POLL_SECONDS", "Sleep", "busy", "holder", "take_lock"]

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
    raise busy(path, timeout)


def _command(pid: int) -> str:
    """The command line of process ``pid`` (Linux's /proc), or "" when unknown."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    words = [
        os.path.basename(w) if n == 0 else w
        for n, w in enumerate(raw.decode(errors="replace").split("\0"))
        if w
    ]
    return " ".join(" ".join(words).split())[:200]


def _flock_pids(path: Path) -> list[int]:
    """The pids ``/proc/locks`` lists for a flock on the file at ``path`` (none when it
    cannot be read)."""
    try:
        info = os.stat(path)
        table = Path("/proc/locks").read_text(encoding="ascii", errors="replace")
    except OSError:
        return []
    pids = []
    for line in table.splitlines():
        fields = line.split()
        if len(fields) < 6 or fields[1] != "FLOCK" or fields[4] == "->":
            continue
        device = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
        if fields[5] == device and fields[4].isdigit():
            pids.append(int(fields[4]))
    return pids


def holder(path: Path) -> str:
    """What holds the flock on ``path``: ``process 4711 (uvicorn app:app)``, ``this
    process (...)`` for another open in this one, or ``another process`` when the
    system does not say."""
    pids = _flock_pids(path)
    if not pids:
        return "another process"
    pid = pids[0]
    if pid == os.getpid():
        return f"this process ({pid}), through another open of the spine"
    command = _command(pid)
    return f"process {pid} ({command})" if command else f"process {pid}"


def busy(path: Path, waited: float) -> LedgerError:
    """HZL010 for the lock at ``path``, not had within ``waited`` seconds, naming its holder."""
    return LedgerError(
        "HZL010",
        f"the spine in {path.parent} has another writer: {holder(path)} holds its lock "
        f"(waited {waited:g} s)",
        "retry when that process is done, or raise lock_timeout; a killed holder frees "
        "the lock at once",
    )
