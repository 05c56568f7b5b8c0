"""What wakes a Heinzelmännchen: the tick (what is due, the sources staged once, the wakes
run through a `TurnRunner`), its plan, the user's verbs that write to the inbox (chat,
resume, stop, retry) and the daemon loop. Each name loads its module on first use, so a
verb's refusal does not load the tick."""

from typing import TYPE_CHECKING

from ledger.lazy import lazy_exports

if TYPE_CHECKING:
    from heinzel.tick.tick import Tick, TickReport, TurnRunner

__all__ = ["Tick", "TickReport", "TurnRunner"]

_WHERE = {name: "heinzel.tick.tick" for name in __all__}

__getattr__ = lazy_exports(__name__, _WHERE, globals())
