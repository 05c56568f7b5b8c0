"""Ctrl-C and SIGTERM while this process runs a turn: stop it now, or at its next step.

The first SIGINT or SIGTERM does what ``hz heinzel stop`` does: the turn ends
``abandoned stopped``. A model request in flight is cancelled at once (the listeners,
`Interrupt.listen`, wake the think step's watcher: `heinzel.turns.steps.watching_stop`);
otherwise the turn stops at its next step boundary (before a step's work or a model
request, `heinzel.turns.delivery.Delivery.poll`), never in the middle of an effect. The
command says how the turn ended and which command goes on: a turn that ended otherwise
before it could stop is reported as it ended. A second signal quits at once (the default
handler): the turn is left open and the next ``hz system daemon tick`` recovers it.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType

__all__ = ["Interrupt", "interruptible"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupt:
    """Which signal asked the running turn to stop (None: none)."""

    def __init__(self) -> None:
        self.signal: str | None = None
        self._listeners: list[Callable[[], None]] = []

    def listen(self, call: Callable[[], None]) -> Callable[[], None]:
        """Call ``call`` on the first signal (from the signal handler: it must only
        schedule, e.g. ``loop.call_soon_threadsafe``); returns what stops listening."""
        self._listeners.append(call)

        def undo() -> None:
            if call in self._listeners:
                self._listeners.remove(call)

        return undo

    def handle(self, number: int, _frame: FrameType | None) -> None:
        """The first signal: note it and restore the defaults (a second one quits now)."""
        self.signal = signal.Signals(number).name
        for each in _SIGNALS:
            signal.signal(
                each, signal.SIG_DFL if each == signal.SIGTERM else signal.default_int_handler
            )
        sys.stderr.write(
            f"\n{self.signal}: stopping the turn "
            "(again to quit now; the tick then recovers the turn)\n"
        )
        for call in list(self._listeners):
            call()


@contextlib.contextmanager
def interruptible() -> Iterator[Interrupt]:
    """SIGINT and SIGTERM noted on an `Interrupt` while the block runs (main thread only;
    elsewhere the signals keep their handlers)."""
    interrupt = Interrupt()
    if threading.current_thread() is not threading.main_thread():
        yield interrupt
        return
    before = {each: signal.getsignal(each) for each in _SIGNALS}
    for each in _SIGNALS:
        signal.signal(each, interrupt.handle)
    try:
        yield interrupt
    finally:
        for each, handler in before.items():
            signal.signal(each, handler)
