"""Logs with structlog: JSON lines for the daemon, readable lines for the command line.

Logs are for operating hz, never a copy of what a Heinzelmännchen read or wrote: the
`drop_content` processor removes any content-ish key (`CONTENT_KEYS`: text, draft, prompt,
messages, content, body, transcript...) before rendering and names what it dropped in
``dropped_keys``. Loggers are bound to the Heinzelmännchen's id (`bind_heinzel`) and the
turn's id (`bind_turn`). The timestamp comes from the injected clock, as everywhere.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from collections.abc import Callable, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO, cast

from heinzel.errors import HeinzelError
from heinzel.ids import is_id
from ledger.errors import HzError
from ledger.event import Clock, format_ts

if TYPE_CHECKING:
    from structlog.typing import EventDict, FilteringBoundLogger, Processor, WrappedLogger

# structlog loads with the first logger (`get_logger`), and a caller that would only log
# below the level asks `enabled` first: a command that writes no log line never pays for it
# (start-up by need). The waiting configuration: its level and how to apply it, read and
# changed under the lock (threads of the web head log, and open their `App`s, together).
_pending: list[tuple[int, Callable[[], None]]] = []
_lock = threading.RLock()

__all__ = [
    "CONTENT_KEYS",
    "LogFile",
    "bind_heinzel",
    "bind_turn",
    "configure_logging",
    "configure_now",
    "drop_content",
    "enabled",
    "get_logger",
    "log_machines",
]

CONTENT_KEYS = frozenset(
    {"text", "draft", "prompt", "messages", "message", "content", "body", "transcript"}
)
"""Keys whose values would be content: never rendered into a log line."""

LogMode = Literal["daemon", "cli"]


def drop_content(_logger: WrappedLogger, _method: str, event_dict: EventDict) -> EventDict:
    """Remove content-ish keys from an event and record their names in ``dropped_keys``."""
    dropped = sorted(key for key in event_dict if key.lower() in CONTENT_KEYS)
    for key in dropped:
        del event_dict[key]
    if dropped:
        event_dict["dropped_keys"] = dropped
    return event_dict


def _timestamper(clock: Clock) -> Processor:
    def stamp(_logger: WrappedLogger, _method: str, event_dict: EventDict) -> EventDict:
        event_dict["ts"] = format_ts(clock())
        return event_dict

    return stamp


def _json(event_dict: MutableMapping[str, Any], **_kwargs: Any) -> str:
    return json.dumps(event_dict, sort_keys=True, ensure_ascii=False, default=str)


def configure_logging(
    mode: LogMode,
    *,
    stream: TextIO | LogFile,
    clock: Clock,
    level: str = "info",
    later: bool = False,
) -> None:
    """Configure structlog once, at the edge (the daemon or the command line).

    ``daemon`` renders one JSON object per line; ``cli`` renders readable lines without
    colour (the command line passes stderr, so logs never mix with ``--json`` output).
    The level is checked now; with ``later`` structlog is configured by the first
    `get_logger` (a process that never logs never loads it), unless it was configured
    by then: that configuration stands (a web head's worker thread opening its `App`
    leaves the one made before the threads started, `configure_now`).
    """
    numeric = logging.getLevelNamesMapping().get(level.upper())
    if numeric is None:
        raise HeinzelError(
            "HZH020", f"unknown log level {level!r}", "use debug, info, warning or error"
        )
    with _lock:
        _pending.clear()
        if not later:
            _configure(mode, stream, clock, numeric)
        elif not _configured():
            _pending.append((numeric, lambda: _configure(mode, stream, clock, numeric)))


def configure_now() -> None:
    """Apply the waiting configuration now (structlog loaded and configured in this
    thread): a process that logs from several threads (the web head) calls it once
    before they start, so no thread configures structlog while another logs."""
    _settle()


def _configured() -> bool:
    """Whether structlog was configured (never, if nothing imported it yet, nor while
    another thread is still importing it: its module is there, half made)."""
    is_configured = getattr(sys.modules.get("structlog"), "is_configured", None)
    return is_configured is not None and bool(is_configured())


def _settle() -> None:
    """Apply the waiting configuration, unless structlog was configured meanwhile by
    someone else (a test's capture): theirs stands."""
    with _lock:
        if _pending and not _configured():
            _pending[0][1]()
        _pending.clear()


def _waiting() -> int | None:
    """The level of the waiting configuration, if one waits."""
    with _lock:
        return _pending[0][0] if _pending else None


def enabled(level: str) -> bool:
    """Whether a line at ``level`` would be written, answered without loading structlog
    while the configuration waits (`configure_logging` ``later``): a caller that would log
    only below the level makes no logger at all. A configured structlog filters by itself."""
    waiting = _waiting()
    if _configured() or waiting is None:
        return True
    return logging.getLevelNamesMapping()[level.upper()] >= waiting


def log_machines() -> None:
    """Let `machines` write its lines (an effect's, a hook's) through this configuration
    while it waits: its first line at or above the level applies it, as hz's own would
    (`machines.telemetry.logs.configure_later`). Called where a turn's machinery runs."""
    from machines.telemetry import logs

    waiting = _waiting()
    if waiting is not None:
        logs.configure_later(waiting, _settle)


class LogFile:
    """The command line's log: ``hz.log`` in the home's ``heinzel/`` folder, opened at the
    first line (through `ledger.files.open_append`: 0600, a link refused), so stderr holds
    only a command's coded error and its hint. A home whose folder is not there yet (a
    read creates none), or a log that cannot be opened, sends the line to stderr instead."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "hz.log"
        self._fd: int | None = None
        self._failed = False

    def write(self, text: str) -> int:
        import os

        from ledger.files import is_private_dir, open_append

        with _lock:
            if self._fd is None and not self._failed:
                try:
                    if is_private_dir(self.path.parent):
                        self._fd = open_append(self.path)
                    else:
                        self._failed = True
                except (OSError, HzError):
                    self._failed = True
            if self._fd is None:
                return sys.stderr.write(text)
            try:
                os.write(self._fd, text.encode("utf-8", "backslashreplace"))
            except OSError:
                return sys.stderr.write(text)
            return len(text)

    def flush(self) -> None:
        """Each line is written whole by `write`."""


def _configure(mode: LogMode, stream: TextIO | LogFile, clock: Clock, numeric: int) -> None:
    import structlog

    renderer: Processor = (
        structlog.processors.JSONRenderer(serializer=_json)
        if mode == "daemon"
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            _timestamper(clock),
            drop_content,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        # the log file gets each line in one write (a line never split between processes)
        logger_factory=structlog.WriteLoggerFactory(file=cast("TextIO", stream))
        if isinstance(stream, LogFile)
        else structlog.PrintLoggerFactory(file=stream),
        cache_logger_on_first_use=False,
    )


def get_logger(**bound: Any) -> FilteringBoundLogger:
    """A logger with ``bound`` key-values (structlog's bound logger); the first one sets up
    logging as `configure_logging` was asked to."""
    import structlog

    _settle()
    log: FilteringBoundLogger = structlog.get_logger()
    return log.bind(**bound)


def bind_heinzel(log: FilteringBoundLogger, heinzel_id: str) -> FilteringBoundLogger:
    """``log`` bound to a Heinzelmännchen's id (key ``heinzel``)."""
    if not is_id(heinzel_id):
        raise HeinzelError("HZH003", f"not a Heinzelmännchen id: {heinzel_id!r}", "pass its id")
    return log.bind(heinzel=heinzel_id)


def bind_turn(log: FilteringBoundLogger, turn_id: str) -> FilteringBoundLogger:
    """``log`` bound to a turn's id (key ``turn``)."""
    return log.bind(turn=turn_id)
