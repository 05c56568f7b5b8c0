"""An fsync started on a worker thread while the caller fsyncs something else (`begin`).

Two fsyncs whose changes land in one journal transaction of the filesystem (a new
file's data and inode, the directory entry that names it) share one commit when they
are issued together; one after the other, the second pays a commit of its own.
``os.fsync`` releases the GIL, so the caller starts one with `begin`, runs its own,
and `Pending.wait` returns when the first has ended (with the error it met, if any).
The worker is one thread per process, made on first use and kept (not a thread per
call); a forked child, which has no thread but its caller, makes its own.
"""

from __future__ import annotations

import os
import queue
import threading

__all__ = ["Pending", "begin"]


class Pending:
    """An fsync handed to the worker; `wait` until it has ended."""

    __slots__ = ("_done", "error", "fd")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.error: OSError | None = None
        self._done = threading.Lock()
        self._done.acquire()

    def wait(self) -> OSError | None:
        """Block until the fsync has ended; the error it raised, or None."""
        self._done.acquire()
        self._done.release()
        return self.error

    def _run(self) -> None:
        try:
            os.fsync(self.fd)
        except OSError as error:
            self.error = error
        finally:
            self._done.release()


class _Worker:
    """The process's fsync thread and its queue."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[Pending] = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="hz-fsync", daemon=True).start()

    def _serve(self) -> None:
        while True:
            self.jobs.get()._run()


class _Held:
    """The process's worker (None until first used) and the lock that makes it once."""

    def __init__(self) -> None:
        self.worker: _Worker | None = None
        self.making = threading.Lock()

    def forget(self) -> None:
        """After a fork: the child has no worker thread, and a lock held then stays held."""
        self.worker, self.making = None, threading.Lock()


_held = _Held()


os.register_at_fork(after_in_child=_held.forget)


def begin(fd: int) -> Pending:
    """Start ``os.fsync(fd)`` on the worker thread; the caller must `Pending.wait` for it
    before it closes ``fd`` or counts on what it makes durable."""
    worker = _held.worker
    if worker is None:
        with _held.making:
            worker = _held.worker
            if worker is None:
                worker = _held.worker = _Worker()
    pending = Pending(fd)
    worker.jobs.put(pending)
    return pending
