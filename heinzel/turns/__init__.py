"""Turns in hz: the host that runs a Heinzelmännchen's turn on the machine (docs/turns-in-hz.md)."""

from heinzel.turns.host import TurnHost, default_adapters
from heinzel.turns.record import EngineRecorder, IndexedJournal, SessionBody
from heinzel.turns.steps import HeinzelSteps, TurnEnv

__all__ = [
    "EngineRecorder",
    "HeinzelSteps",
    "IndexedJournal",
    "SessionBody",
    "TurnEnv",
    "TurnHost",
    "default_adapters",
]
