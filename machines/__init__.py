"""machines: the explicit state machines of a turn, knowing nothing of Heinzelmännchen.

The public surface a host needs: the journal and body protocols (with in-memory
versions), the steps protocol and what a step may return, the context a step gets,
effects and tools, keys and causes, starting, resuming and skipping turns, the
session (single flight, steering, stop), waits, the fold, crash points and errors.
"""

from machines import keys
from machines.context import ModelReply, Steer, TurnContext
from machines.crash import crash_hook
from machines.effects import (
    Effect,
    EffectFailed,
    LocalProbe,
    Presence,
    ProbeUnknown,
    WorldProbe,
    recorded_in,
)
from machines.errors import MachineError
from machines.fold import TurnState, fold
from machines.journal import Body, InMemoryBody, InMemoryJournal, Journal, content_hash
from machines.keys import Wake, coalesce, key_action
from machines.resume import Pins, resume_turn, skip_turn, start_turn, supersede
from machines.runner import Settings
from machines.session import Session
from machines.spine_journal import SpineIndex, SpineJournal
from machines.steps import Acted, Fail, Skip, Steps, Wait
from machines.tools import INTERRUPTED, ToolDecl, ToolFailed
from machines.waits import Due, Facts, PendingWait, due_waits

__all__ = [
    "INTERRUPTED",
    "Acted",
    "Body",
    "Due",
    "Effect",
    "EffectFailed",
    "Facts",
    "Fail",
    "InMemoryBody",
    "InMemoryJournal",
    "Journal",
    "LocalProbe",
    "MachineError",
    "ModelReply",
    "PendingWait",
    "Pins",
    "Presence",
    "ProbeUnknown",
    "Session",
    "Settings",
    "Skip",
    "SpineIndex",
    "SpineJournal",
    "Steer",
    "Steps",
    "ToolDecl",
    "ToolFailed",
    "TurnContext",
    "TurnState",
    "Wait",
    "Wake",
    "WorldProbe",
    "coalesce",
    "content_hash",
    "crash_hook",
    "due_waits",
    "fold",
    "key_action",
    "keys",
    "recorded_in",
    "resume_turn",
    "skip_turn",
    "start_turn",
    "supersede",
]
