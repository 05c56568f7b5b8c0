"""One event loop per thread for turns driven from sync code (`run_sync`).

`asyncio.run` creates a loop (selector, self-pipe), runs the coroutine, then shuts the
loop down and closes it: a fixed cost that a turn driven from sync code pays each
time. `run_sync` runs the coroutine on this thread's own loop instead, made on first
use and kept (an `asyncio.Runner`), as `asyncio.run` would run it otherwise: in a copy
of the caller's context, refused inside a running loop (RuntimeError), SIGINT cancelling
it in the main thread (unless a handler of the host's own is installed). What it leaves
behind is cancelled before it returns, so nothing of one turn runs into the next. The
loop is closed when its thread ends (or at exit), and made anew after a fork or after
an interrupt escaped it (KeyboardInterrupt, SystemExit).
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
import weakref
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["run_sync"]

T = TypeVar("T")


class _Held:
    """This thread's runner, closed with its loop when the thread lets go of it."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.runner = asyncio.Runner()
        self.loop = self.runner.get_loop()
        weakref.finalize(self, self.loop.close)

    def close(self) -> None:
        self.runner.close()


class _Local(threading.local):
    held: _Held | None = None


_local = _Local()


def _runner() -> _Held:
    held = _local.held
    if held is not None and held.pid == os.getpid() and not held.loop.is_closed():
        return held
    if held is not None and held.pid == os.getpid():
        held.close()
    _local.held = held = _Held()
    return held


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to its end on this thread's loop and return its result (or raise
    what it raised), as `asyncio.run` would without a new loop each time."""
    if asyncio._get_running_loop() is not None:
        raise RuntimeError("run_sync() cannot be called from a running event loop")
    held = _runner()
    try:
        return held.runner.run(coro, context=contextvars.copy_context())
    except (KeyboardInterrupt, SystemExit):
        _local.held = None
        held.close()
        raise
    finally:
        _cancel_left(held.loop)


def _cancel_left(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel the tasks a run left on ``loop`` and let them end (as `asyncio.run` does)."""
    if loop.is_closed() or loop.is_running():
        return
    left = asyncio.all_tasks(loop)
    if not left:
        return
    for task in left:
        task.cancel()
    loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
