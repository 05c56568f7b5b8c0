"""How `machines` logs: through structlog, and only when the host configured it.

A library that writes to a host's stderr uninvited garbles the host's own output.
`machines` therefore logs only after the host called ``structlog.configure`` (hz
does at its edge, `heinzel.logs`); until then every call here is silent. The
spine, not the log, is the record of what happened.
"""

from __future__ import annotations

from typing import Any

import structlog


def info(event: str, **values: Any) -> None:
    """Log ``event`` at info level, if the host configured structlog."""
    if structlog.is_configured():
        structlog.get_logger("machines").info(event, **values)


def warning(event: str, **values: Any) -> None:
    """Log ``event`` at warning level, if the host configured structlog."""
    if structlog.is_configured():
        structlog.get_logger("machines").warning(event, **values)
