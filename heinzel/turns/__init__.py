"""Turns in hz: the host that runs a Heinzelmännchen's turn on the machine (docs/turns-in-hz.md).

The names below load on first use (PEP 562), so importing `heinzel.turns` (which the
surfaces do, through `heinzel.app`) does not import the engine or pydantic-ai.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from heinzel.turns.host import TurnHost, default_adapters
    from heinzel.turns.operations import Turns
    from heinzel.turns.record import EngineRecorder, IndexedJournal, SessionBody
    from heinzel.turns.steps import HeinzelSteps, TurnEnv

__all__ = [
    "EngineRecorder",
    "HeinzelSteps",
    "IndexedJournal",
    "SessionBody",
    "TurnEnv",
    "TurnHost",
    "Turns",
    "default_adapters",
]

_WHERE = {
    "TurnHost": "heinzel.turns.host",
    "Turns": "heinzel.turns.operations",
    "default_adapters": "heinzel.turns.host",
    "EngineRecorder": "heinzel.turns.record",
    "IndexedJournal": "heinzel.turns.record",
    "SessionBody": "heinzel.turns.record",
    "HeinzelSteps": "heinzel.turns.steps",
    "TurnEnv": "heinzel.turns.steps",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'heinzel.turns' has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name]), name)
