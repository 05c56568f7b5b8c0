"""run_sync: one event loop per thread, each run as asyncio.run would run it."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import os
import signal
import subprocess
import sys
import threading

import pytest

from machines.core.loop import run_sync
from tests.waits import HANG

SEEN: contextvars.ContextVar[str] = contextvars.ContextVar("seen", default="unset")


async def loop_now() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


def in_thread() -> asyncio.AbstractEventLoop:
    found: list[asyncio.AbstractEventLoop] = []
    thread = threading.Thread(target=lambda: found.append(run_sync(loop_now())))
    thread.start()
    thread.join()
    return found[0]


class TestRunSync:
    def test_runs_of_one_thread_share_its_loop_and_threads_do_not(self) -> None:
        """Two runs in a thread see one loop; another thread's run sees its own."""
        first, second = run_sync(loop_now()), run_sync(loop_now())
        assert first is second
        assert in_thread() is not first

    def test_a_thread_loop_is_closed_when_the_thread_ends(self) -> None:
        """The loop of a thread that ended is closed (no loop left open behind it)."""
        loop = in_thread()
        gc.collect()
        assert loop.is_closed()

    def test_a_context_variable_set_in_a_run_does_not_reach_the_next(self) -> None:
        """Each run gets a copy of the caller's context, as with asyncio.run."""

        async def set_and_read() -> str:
            before = SEEN.get()
            SEEN.set("set")
            return before

        assert [run_sync(set_and_read()), run_sync(set_and_read())] == ["unset", "unset"]

    def test_a_task_a_run_leaves_behind_is_cancelled(self) -> None:
        """A task still pending when the coroutine returns is cancelled before run_sync
        returns, so nothing of one run runs into the next."""
        started: list[asyncio.Task[None]] = []

        async def leave_one() -> None:
            started.append(asyncio.get_running_loop().create_task(asyncio.sleep(60)))
            await asyncio.sleep(0)

        run_sync(leave_one())
        assert started[0].cancelled()

    def test_an_interrupt_leaves_the_next_run_a_fresh_loop(self) -> None:
        """A KeyboardInterrupt propagates, closes the thread's loop, and the next run
        gets a new one."""
        before = run_sync(loop_now())

        async def interrupted() -> None:
            raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            run_sync(interrupted())
        assert before.is_closed()
        assert run_sync(loop_now()) is not before

    def test_a_run_inside_a_running_loop_is_refused(self) -> None:
        """As asyncio.run, run_sync refuses to run inside a running loop."""

        async def nested() -> None:
            inner = loop_now()
            try:
                run_sync(inner)
            finally:
                inner.close()

        with pytest.raises(RuntimeError, match="running event loop"):
            asyncio.run(nested())

    def test_an_exception_of_the_coroutine_propagates(self) -> None:
        """What the coroutine raises is raised by run_sync, and the loop stays usable."""

        async def failing() -> None:
            raise ValueError("boom")

        with pytest.raises(ValueError, match="boom"):
            run_sync(failing())
        assert run_sync(loop_now()) is run_sync(loop_now())

    def test_sigint_cancels_the_run_and_raises_keyboard_interrupt(self) -> None:
        """A real SIGINT during a run cancels its coroutine and raises KeyboardInterrupt, as
        asyncio.run does; the default handler is back afterwards and the next run works."""
        child = subprocess.Popen(
            [sys.executable, "-c", _SIGINT_CHILD],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": os.getcwd()},
        )
        assert child.stdout is not None
        assert child.stdout.readline() == "ready\n"
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=HANG)
        assert out.split() == ["cancelled", "interrupted", "default", "7"]
        assert child.returncode == 0

    def test_a_sigint_another_thread_receives_still_wakes_the_loop(self) -> None:
        """A process-wide SIGINT may land on any thread (a host has its fsync worker, a
        client library its own): its handler runs only in the main thread, which is asleep
        in select() and must be woken. Here the signal goes to a second thread once the
        main one sleeps (its /proc state), and the run is still cancelled at once."""
        child = subprocess.Popen(
            [sys.executable, "-c", _OTHER_THREAD_CHILD],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": os.getcwd()},
        )
        out, _ = child.communicate(timeout=HANG)
        assert out.split() == ["cancelled", "interrupted"]
        assert child.returncode == 0


_SIGINT_CHILD = """
import asyncio, signal, sys
from machines.core.loop import run_sync

async def wait_long():
    try:
        print("ready", flush=True)
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        print("cancelled", flush=True)
        raise

async def seven():
    return 7

try:
    run_sync(wait_long())
except KeyboardInterrupt:
    print("interrupted")
print("default" if signal.getsignal(signal.SIGINT) is signal.default_int_handler else "other")
print(run_sync(seven()))
"""


_OTHER_THREAD_CHILD = """
import asyncio, signal, threading
from pathlib import Path
from machines.core.loop import run_sync

main = threading.main_thread().native_id
go = threading.Event()

def other():
    go.wait()
    stat = Path(f"/proc/self/task/{main}/stat")
    while stat.read_text().rsplit(")", 1)[1].split()[0] != "S":
        pass  # until the main thread sleeps in select()
    signal.pthread_kill(threading.get_ident(), signal.SIGINT)

threading.Thread(target=other, daemon=True).start()

async def wait_long():
    try:
        go.set()
        await asyncio.Event().wait()  # forever, unless cancelled
    except asyncio.CancelledError:
        print("cancelled", flush=True)
        raise

try:
    run_sync(wait_long())
except KeyboardInterrupt:
    print("interrupted")
"""
