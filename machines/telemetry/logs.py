"""How `machines` logs: through structlog, and only when the host configured it.

A library that writes to a host's stderr uninvited garbles the host's own output.
`machines` therefore logs only after the host called ``structlog.configure`` (hz
does at its edge, `heinzel.logs`); until then every call here is silent. The
spine, not the log, is the record of what happened.

A host that would rather not load structlog in a process that writes no log line (a
command line's start-up) registers its configuration with `configure_later`: the
first line at or above its level runs it (`settle`), and a line below it is dropped
without structlog being imported for it.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["configure_later", "enabled", "info", "settle", "warning"]

_later: list[tuple[int, Callable[[], None]]] = []
_lock = threading.RLock()  # threads of one host log together: one of them configures


def configure_later(level: int | None, configure: Callable[[], None] | None = None) -> None:
    """Register how structlog is to be configured, at ``level`` (logging's numbers), when
    something first logs at or above it; ``None`` forgets a registration."""
    with _lock:
        _later.clear()
        if level is not None and configure is not None:
            _later.append((level, configure))


def _configured() -> bool:
    """Whether structlog was configured: never, if nothing imported it yet, nor while
    another thread is still importing it (its module is there, half made)."""
    is_configured = getattr(sys.modules.get("structlog"), "is_configured", None)
    return is_configured is not None and bool(is_configured())


def enabled(level: int) -> bool:
    """Whether a line at ``level`` can be written: a configured structlog decides (it
    filters by itself), else the registered configuration's level; without either, no."""
    if _configured():
        return True
    with _lock:
        return bool(_later) and level >= _later[0][0]


def settle() -> None:
    """Configure structlog as registered, now (the registered function decides what a
    structlog configured meanwhile by someone else means)."""
    with _lock:  # a thread that finds it taken waits until structlog is configured
        if _later:
            _later.pop()[1]()


def info(event: str, **values: Any) -> None:
    """Log ``event`` at info level, if the host configured structlog."""
    if enabled(logging.INFO):
        settle()
        import structlog

        structlog.get_logger("machines").info(event, **values)


def warning(event: str, **values: Any) -> None:
    """Log ``event`` at warning level, if the host configured structlog."""
    if enabled(logging.WARNING):
        settle()
        import structlog

        structlog.get_logger("machines").warning(event, **values)
