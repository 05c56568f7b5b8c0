"""What wakes a Heinzelmännchen: the tick (what is due, the sources staged once, the wakes
run through a `TurnRunner`), its plan, the user's verbs that write to the inbox (chat,
resume, stop, retry) and the daemon loop."""

from heinzel.tick.tick import Tick, TickReport, TurnRunner

__all__ = ["Tick", "TickReport", "TurnRunner"]
