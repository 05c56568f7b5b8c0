"""Ctrl-C and SIGTERM while this process runs a turn: stop at the next step boundary.

The first SIGINT or SIGTERM does what ``hz heinzel stop`` does: the turn ends
``abandoned stopped`` at its next step boundary (before a step's work or a model
request, `heinzel.turns.delivery.Delivery.poll`), never in the middle of an effect, and
the command says so and which command goes on. A turn that completes before that
boundary is reported as completed. A second signal quits at once (the default handler):
the turn is left open and the next ``hz system daemon tick`` recovers it.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = ["Interrupt", "interruptible"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupt:
    """Which signal asked the running turn to stop (None: none)."""

    def __init__(self) -> None:
        self.signal: str | None = None

    def handle(self, number: int, _frame: FrameType | None) -> None:
        """The first signal: note it and restore the defaults (a second one quits now)."""
        self.signal = signal.Signals(number).name
        for each in _SIGNALS:
            signal.signal(
                each, signal.SIG_DFL if each == signal.SIGTERM else signal.default_int_handler
            )
        sys.stderr.write(
            f"\n{self.signal}: stopping the turn at its next step "
            "(again to quit now; the tick then recovers the turn)\n"
        )


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
