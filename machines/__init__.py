"""machines: the explicit state machines of a turn, knowing nothing of Heinzelmännchen.

The public surface a host needs: the journal and body protocols (with in-memory
versions and the durable `DiskBody`), the host's `Vocabulary`, turn ids
(`new_turn_id`), the retry fork, the steps protocol and what a step may return,
the context a step gets, effects and tools, keys and causes, the short way
(`machines.api`: ``@tool``, ``@effect``, `TypedSteps`, `Host`), starting, resuming
and skipping turns (`run_sync` drives one from sync code), the session (single
flight, steering, stop), waits, the fold, crash points and errors.
"""

from typing import TYPE_CHECKING

from ledger.lazy import lazy_exports

# A submodule of the same name as the function: bound now, so the function wins.
from machines.fold import TurnState, fold

if TYPE_CHECKING:
    from machines import keys
    from machines.api import JOBS, Host, TypedSteps, effect, tool
    from machines.context import ModelReply, Steer, TurnContext
    from machines.crash import body_crash_hook, body_sync_crash_hook, crash_hook
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
    from machines.host_vocabulary import HZ, Vocabulary
    from machines.journal import Body, InMemoryBody, InMemoryJournal, Journal, content_hash
    from machines.keys import Wake, coalesce, key_action
    from machines.loop import run_sync
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
    from machines.steps import Acted, Fail, OutOfTime, Skip, Steps, Wait
    from machines.tools import INTERRUPTED, ToolDecl, ToolFailed
    from machines.values import ValueRefused
    from machines.waits import Due, Facts, PendingWait, due_waits

__all__ = [
    "HZ",
    "INTERRUPTED",
    "JOBS",
    "Acted",
    "Body",
    "DiskBody",
    "Due",
    "Effect",
    "EffectFailed",
    "EffectRefused",
    "Facts",
    "Fail",
    "Host",
    "InMemoryBody",
    "InMemoryJournal",
    "Journal",
    "LocalProbe",
    "MachineError",
    "ModelReply",
    "OutOfTime",
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
    "TypedSteps",
    "ValueRefused",
    "Vocabulary",
    "Wait",
    "Wake",
    "WorldProbe",
    "body_crash_hook",
    "body_sync_crash_hook",
    "coalesce",
    "content_hash",
    "crash_hook",
    "due_waits",
    "effect",
    "fold",
    "key_action",
    "keys",
    "new_turn_id",
    "recorded_in",
    "resume_turn",
    "retry_fork",
    "run_sync",
    "skip_turn",
    "start_turn",
    "supersede",
    "tool",
]

_WHERE: dict[str, str] = {
    "JOBS": "machines.api",
    "Host": "machines.api",
    "TypedSteps": "machines.api",
    "effect": "machines.api",
    "tool": "machines.api",
    "ValueRefused": "machines.values",
    "keys": "machines.keys",
    "DiskBody": "machines.disk_body",
    "EffectRefused": "machines.effects",
    "HZ": "machines.host_vocabulary",
    "Vocabulary": "machines.host_vocabulary",
    "new_turn_id": "machines.resume",
    "retry_fork": "machines.resume",
    "ModelReply": "machines.context",
    "Steer": "machines.context",
    "TurnContext": "machines.context",
    "body_crash_hook": "machines.crash",
    "body_sync_crash_hook": "machines.crash",
    "crash_hook": "machines.crash",
    "Effect": "machines.effects",
    "EffectFailed": "machines.effects",
    "LocalProbe": "machines.effects",
    "Presence": "machines.effects",
    "ProbeUnknown": "machines.effects",
    "WorldProbe": "machines.effects",
    "recorded_in": "machines.effects",
    "MachineError": "machines.errors",
    "Body": "machines.journal",
    "InMemoryBody": "machines.journal",
    "InMemoryJournal": "machines.journal",
    "Journal": "machines.journal",
    "content_hash": "machines.journal",
    "run_sync": "machines.loop",
    "Wake": "machines.keys",
    "coalesce": "machines.keys",
    "key_action": "machines.keys",
    "Pins": "machines.resume",
    "resume_turn": "machines.resume",
    "skip_turn": "machines.resume",
    "start_turn": "machines.resume",
    "supersede": "machines.resume",
    "Settings": "machines.runner",
    "Session": "machines.session",
    "SpineIndex": "machines.spine_journal",
    "SpineJournal": "machines.spine_journal",
    "Acted": "machines.steps",
    "Fail": "machines.steps",
    "OutOfTime": "machines.steps",
    "Skip": "machines.steps",
    "Steps": "machines.steps",
    "Wait": "machines.steps",
    "INTERRUPTED": "machines.tools",
    "ToolDecl": "machines.tools",
    "ToolFailed": "machines.tools",
    "Due": "machines.waits",
    "Facts": "machines.waits",
    "PendingWait": "machines.waits",
    "due_waits": "machines.waits",
}

__getattr__ = lazy_exports(__name__, _WHERE, globals())
