"""The resident daemon: one process that has imported hz and pydantic-ai once, and runs
each tick in a forked child (``hz system daemon run``).

The parent imports what a tick and its turns import and builds pydantic-ai's message
validator (`preload`), freezes those objects
out of the collector's way (so the children share their pages), and never opens the
home: no index connection, no lock, no spine is ever carried across a fork. Each tick
is `in_child`: an ``os.fork`` whose child opens the home afresh, takes the tick lock and
the spine locks like any ``hz system daemon tick``, prints its report, closes the index
and leaves with ``os._exit`` and its own exit status. A turn that crashes (an
``HZ_CRASH_AT`` point's ``os._exit(137)``, a segfault, the OOM killer) ends that child,
never the daemon: the parent reads the status, reports ``HZH520`` and ticks again at the
next interval, whose recovery resumes the turn (``woken_by: recovery``). On Linux the
child dies with the daemon (``PR_SET_PDEATHSIG``): a SIGKILL of the daemon mid-turn
leaves the turn open with its spine lock free, for the next tick's recovery, never a
turn running on without its daemon.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import signal
import sys
from collections.abc import Callable

__all__ = ["PRELOAD", "in_child", "preload", "status_text"]

PRELOAD = (
    "heinzel.cli.verbs",
    "heinzel.app",
    "heinzel.service",
    "heinzel.tick.tick",
    "heinzel.turns.host",
    "heinzel.turns.models",
    "heinzel.turns.inputs",
    "heinzel.turns.failure",
    "heinzel.engine.offline",
    "heinzel.engine.run",
    "heinzel.engine.chat",
    "heinzel.capabilities.configured",
    "pydantic_ai.models.function",
    "pydantic_ai.models.openai",
    "pydantic_ai.providers.openai",
    "pydantic_ai.models.anthropic",
    "pydantic_ai.providers.anthropic",
    "machines.loading",
    "genai_prices.data",
    "anyio._backends._asyncio",
    "concurrent.futures.thread",
)
"""What a tick's turns import (``python -X importtime`` of a wake and a tick, as
`tests/forkhz.py` preloads, and what a drafted wake still imported after them: the
model prices, the event loop's backend), what a wake loads only when it needs it (a chat
turn's proposals, the ``[adapters.*]`` tables' models), and the providers' models, which
read their keys when a model is made, not at import (a provider whose SDK is not
installed is left out)."""

_PR_SET_PDEATHSIG = 1


def preload() -> None:
    """Import `PRELOAD` once, then freeze what is loaded out of the collector's reach
    (the forked children then share those pages instead of copying them)."""
    for name in PRELOAD:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    with contextlib.suppress(ImportError):
        # pydantic-ai builds its messages' validator on first use (a deferred schema,
        # the largest part of a first model request's CPU): build it once, here
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        ModelMessagesTypeAdapter.validate_python([])
    gc.collect()
    gc.freeze()


def in_child(work: Callable[[], int]) -> int:
    """Run ``work`` in a forked child and wait for it: the child's exit status (its
    ``work()``'s answer), or minus the signal that ended it. The daemon's SIGTERM and
    SIGINT handlers stay in the child, where they only set the child's copy of the stop
    flag, so a stop asked mid-tick lets the tick finish."""
    sys.stdout.flush()
    sys.stderr.flush()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # pragma: no cover  (the child; its effects are what the tests read)
        code = 70
        try:
            _die_with(parent)
            code = work()
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(code)
    try:
        _, status = os.waitpid(pid, 0)  # a signal handler's interruption is retried
    except ChildProcessError:  # pragma: no cover  (reaped elsewhere: its status unknown)
        return 70
    return os.waitstatus_to_exitcode(status)


def _die_with(parent: int) -> None:
    """Have the kernel SIGKILL this child when the daemon dies (Linux), and leave at once
    when it already has."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(137)


def status_text(status: int) -> str:
    """``exit status 137`` or ``signal SIGKILL``, for `HZH520`."""
    if status < 0:
        try:
            return f"signal {signal.Signals(-status).name}"
        except ValueError:
            return f"signal {-status}"
    return f"exit status {status}"
