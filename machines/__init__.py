"""machines: the explicit state machines of a turn, knowing nothing of Heinzelmännchen.

The public surface a host needs: the journal and body protocols (with in-memory
versions and the durable `DiskBody`), the host's `Vocabulary`, turn ids
(`new_turn_id`), the retry fork, the steps protocol and what a step may return,
the context a step gets, effects and tools, keys and causes, the short way
(`machines.api`: ``@tool``, ``@effect``, `TypedSteps`, `Host`), starting, resuming
and skipping turns (`run_sync` drives one from sync code), the session (single
flight, steering, stop), waits, the fold, crash points, what a host observes
(`StepId`, `Observer`, `Tracing`) and errors.

Behind it the rooms (docs/architecture.md): `machines.core` (what runs a turn),
`machines.stores` (where its record lives), `machines.telemetry` (what a host sees),
`machines.crashkit` (crash points, the crash matrix, golden spines, test doubles).
Every name here stays importable from `machines` wherever its module lives.
"""

from typing import TYPE_CHECKING

from ledger.lazy import lazy_exports

# A submodule of the same name as the function: bound now, so the function wins.
from machines.core.fold import TurnState, fold

if TYPE_CHECKING:
    from machines import keys
    from machines.api import JOBS, Host, TypedSteps, effect, tool
    from machines.core.context import ModelReply, Steer, TurnContext
    from machines.core.effects import (
        Effect,
        EffectFailed,
        EffectRefused,
        LocalProbe,
        Presence,
        ProbeUnknown,
        WorldProbe,
        recorded_in,
    )
    from machines.core.loop import run_sync
    from machines.core.resume import (
        Pins,
        new_turn_id,
        resume_turn,
        retry_fork,
        skip_turn,
        start_turn,
        supersede,
    )
    from machines.core.runner import Settings
    from machines.core.session import Session
    from machines.core.steps import Acted, Fail, OutOfTime, Skip, Steps, Wait
    from machines.core.tools import INTERRUPTED, ToolDecl, ToolFailed
    from machines.core.values import ValueRefused
    from machines.core.waits import Due, Facts, PendingWait, due_waits
    from machines.crashkit.crash import body_crash_hook, body_sync_crash_hook, crash_hook
    from machines.errors import MachineError
    from machines.host_vocabulary import HZ, Vocabulary
    from machines.keys import Wake, coalesce, key_action
    from machines.stores.disk_body import DiskBody
    from machines.stores.journal import Body, InMemoryBody, InMemoryJournal, Journal, content_hash
    from machines.stores.spine_journal import SpineIndex, SpineJournal
    from machines.telemetry.observe import Observer, StepId
    from machines.telemetry.otel import Tracing

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
    "Observer",
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
    "StepId",
    "Steps",
    "ToolDecl",
    "ToolFailed",
    "Tracing",
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
    "ValueRefused": "machines.core.values",
    "keys": "machines.keys",
    "DiskBody": "machines.stores.disk_body",
    "EffectRefused": "machines.core.effects",
    "HZ": "machines.host_vocabulary",
    "Vocabulary": "machines.host_vocabulary",
    "new_turn_id": "machines.core.resume",
    "retry_fork": "machines.core.resume",
    "ModelReply": "machines.core.context",
    "Steer": "machines.core.context",
    "TurnContext": "machines.core.context",
    "body_crash_hook": "machines.crashkit.crash",
    "body_sync_crash_hook": "machines.crashkit.crash",
    "crash_hook": "machines.crashkit.crash",
    "Effect": "machines.core.effects",
    "EffectFailed": "machines.core.effects",
    "LocalProbe": "machines.core.effects",
    "Presence": "machines.core.effects",
    "ProbeUnknown": "machines.core.effects",
    "WorldProbe": "machines.core.effects",
    "recorded_in": "machines.core.effects",
    "MachineError": "machines.errors",
    "Body": "machines.stores.journal",
    "InMemoryBody": "machines.stores.journal",
    "InMemoryJournal": "machines.stores.journal",
    "Journal": "machines.stores.journal",
    "content_hash": "machines.stores.journal",
    "run_sync": "machines.core.loop",
    "Wake": "machines.keys",
    "coalesce": "machines.keys",
    "key_action": "machines.keys",
    "Pins": "machines.core.resume",
    "resume_turn": "machines.core.resume",
    "skip_turn": "machines.core.resume",
    "start_turn": "machines.core.resume",
    "supersede": "machines.core.resume",
    "Settings": "machines.core.runner",
    "Session": "machines.core.session",
    "SpineIndex": "machines.stores.spine_journal",
    "SpineJournal": "machines.stores.spine_journal",
    "Acted": "machines.core.steps",
    "Fail": "machines.core.steps",
    "OutOfTime": "machines.core.steps",
    "Skip": "machines.core.steps",
    "Steps": "machines.core.steps",
    "Wait": "machines.core.steps",
    "INTERRUPTED": "machines.core.tools",
    "ToolDecl": "machines.core.tools",
    "ToolFailed": "machines.core.tools",
    "Due": "machines.core.waits",
    "Facts": "machines.core.waits",
    "PendingWait": "machines.core.waits",
    "due_waits": "machines.core.waits",
    "Observer": "machines.telemetry.observe",
    "StepId": "machines.telemetry.observe",
    "Tracing": "machines.telemetry.otel",
}

__getattr__ = lazy_exports(__name__, _WHERE, globals())
