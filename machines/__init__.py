"""machines: the explicit state machines of a turn, knowing nothing of Heinzelmännchen.

The public surface a host needs: the journal and body protocols (with in-memory
versions and the durable `DiskBody`), the host's `Vocabulary`, turn ids
(`new_turn_id`), the retry fork, the steps protocol and what a step may return,
the context a step gets, effects and tools, keys and causes, starting, resuming
and skipping turns, the session (single flight, steering, stop), waits, the fold,
crash points and errors.
"""

from machines import keys
from machines.context import ModelReply, Steer, TurnContext
from machines.crash import crash_hook
from machines.disk_body import DiskBody
from machines.effects import (
    Effect,
    EffectFailed,
    EffectRefused,
    LocalProbe,
    Presence,
    ProbeUnknown,
    WorldProbe,
    recorded_in,
)
from machines.errors import MachineError
from machines.fold import TurnState, fold
from machines.host_vocabulary import HZ, Vocabulary
from machines.journal import Body, InMemoryBody, InMemoryJournal, Journal, content_hash
from machines.keys import Wake, coalesce, key_action
from machines.resume import (
    Pins,
    new_turn_id,
    resume_turn,
    retry_fork,
    skip_turn,
    start_turn,
    supersede,
)
from machines.runner import Settings
from machines.session import Session
from machines.spine_journal import SpineIndex, SpineJournal
from machines.steps import Acted, Fail, Skip, Steps, Wait
from machines.tools import INTERRUPTED, ToolDecl, ToolFailed
from machines.waits import Due, Facts, PendingWait, due_waits

__all__ = [
    "HZ",
    "INTERRUPTED",
    "Acted",
    "Body",
    "DiskBody",
    "Due",
    "Effect",
    "EffectFailed",
    "EffectRefused",
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
    "Vocabulary",
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
    "new_turn_id",
    "recorded_in",
    "resume_turn",
    "retry_fork",
    "skip_turn",
    "start_turn",
    "supersede",
]
