"""A spine's lock held by the test itself, as a process running a turn (another writer)
holds it: what a command, the page's child or the tick does while it is taken."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def holding(lock: Path) -> Iterator[None]:
    """The lock file ``lock`` (a Heinzelmännchen's spine lock), held exclusively until the
    block ends."""
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
