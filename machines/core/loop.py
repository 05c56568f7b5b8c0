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

A run does what `asyncio.Runner.run` does, with the SIGINT handler read, set and put
back through CPython's ``_signal`` (what the `signal` module wraps): ``signal.getsignal``
and ``signal.signal`` turn each handler into an enum member when they can, a failed
enum lookup each (four per run).
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import os
import signal
import threading
import weakref
from collections.abc import Callable, Coroutine
from types import FrameType
from typing import Any, TypeVar

__all__ = ["run_sync"]

T = TypeVar("T")

try:
    _raw: Any = importlib.import_module("_signal")
except ImportError:  # pragma: no cover - a Python without CPython's _signal
    _raw = signal
_getsignal: Callable[[int], object] = _raw.getsignal
_setsignal: Callable[[int, Any], object] = _raw.signal
_DEFAULT = signal.default_int_handler


def _self_pipe(loop: asyncio.AbstractEventLoop) -> int:
    """The write end of the loop's self-pipe (what ``add_signal_handler`` hands to
    ``signal.set_wakeup_fd``); -1 (no wakeup fd) for a loop without one."""
    sock = getattr(loop, "_csock", None)
    return sock.fileno() if sock is not None else -1


class _Held:
    """This thread's runner, closed with its loop when the thread lets go of it."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.runner = asyncio.Runner()
        self.loop = self.runner.get_loop()
        weakref.finalize(self, self.loop.close)
        self.task: asyncio.Task[Any] | None = None
        self.interrupts = 0
        self.on_sigint = self._on_sigint
        """One bound method, so the handler found installed can be told by identity."""

    def run(self, coro: Coroutine[Any, Any, T], context: contextvars.Context) -> T:
        """`asyncio.Runner.run`: the task, SIGINT cancelling it in the main thread while
        the default handler is the one installed, KeyboardInterrupt if it was."""
        if not asyncio.iscoroutine(coro):
            raise ValueError(f"a coroutine was expected, got {coro!r}")
        task = self.loop.create_task(coro, context=context)
        handler, wakeup = None, None
        if threading.current_thread() is threading.main_thread():
            # A signal's C handler writes to the loop's self-pipe while the run lasts, so a
            # signal that lands on another thread (a host's fsync worker, a client library's
            # own) or just before the loop blocks in select() still wakes it to run the
            # Python handler, this one or a host's (as `loop.add_signal_handler` arranges).
            try:
                wakeup = signal.set_wakeup_fd(_self_pipe(self.loop), warn_on_full_buffer=False)
            except ValueError:  # the main thread of an interpreter without signals
                wakeup = None
            if wakeup is not None and _getsignal(signal.SIGINT) is _DEFAULT:
                handler = self.on_sigint
                _setsignal(signal.SIGINT, handler)
        self.task, self.interrupts = task, 0
        try:
            return self.loop.run_until_complete(task)
        except asyncio.CancelledError:
            if self.interrupts > 0 and task.uncancel() == 0:
                raise KeyboardInterrupt() from None
            raise
        finally:
            self.task = None
            if wakeup is not None:
                signal.set_wakeup_fd(wakeup)
            if handler is not None and _getsignal(signal.SIGINT) is handler:
                _setsignal(signal.SIGINT, _DEFAULT)

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        self.interrupts += 1
        task = self.task
        if self.interrupts == 1 and task is not None and not task.done():
            task.cancel()
            self.loop.call_soon_threadsafe(lambda: None)  # wake a loop blocked in select()
            return
        raise KeyboardInterrupt()

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
        return held.run(coro, contextvars.copy_context())
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
