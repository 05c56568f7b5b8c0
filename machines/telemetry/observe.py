"""What a host sees of its turns as they run: errors, checkpoints, and traces.

Three hooks, all in `machines.Settings` (and `Session`'s keywords), none needed:

- ``on_error(error, where)``: a step raised; ``error`` is the exception object itself
  (with its traceback), ``where`` the `StepId` (turn, step, key, cause). The turn ends
  failed as before, and the returned `TurnState` carries the same object in
  ``exception``; the spine records only its code or class name.
- ``on_checkpoint(event)``: every event a running turn journals, once its journal's
  `append` returned (the line is durable); in journal order.
- ``observers``: objects told when a turn run and each of its steps begin and end
  (`Observer`); `machines.telemetry.otel.Tracing` makes OpenTelemetry spans of them.

A hook that raises is logged (when the host configured structlog) and the turn goes
on: observing never changes what a turn does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from ledger.event import Event
from ledger.records import frozen_record
from machines.telemetry import logs

if TYPE_CHECKING:
    from machines.core.fold import TurnState

__all__ = ["Observer", "OnCheckpoint", "OnError", "StepId", "call_hook", "step_id"]


@frozen_record
class StepId:
    """Which step of which turn: the turn id, the step, the turn's first key and cause."""

    turn: str
    step: str
    key: str | None
    cause: str | None


OnError = Callable[[BaseException, StepId], None]
OnCheckpoint = Callable[[Event], None]


class Observer(Protocol):
    """Told of a turn run (one process driving a turn, until it waits or ends) and of
    each step in it; the state is the live one (read it, never change it)."""

    def turn_began(self, state: TurnState) -> None: ...

    def step_began(self, state: TurnState, step: str) -> None: ...

    def step_ended(self, state: TurnState, step: str) -> None: ...

    def turn_ended(self, state: TurnState) -> None: ...


def step_id(state: TurnState, step: str) -> StepId:
    """The `StepId` of ``step`` in the turn ``state`` describes."""
    return StepId(state.turn, step, state.keys[0] if state.keys else None, state.cause)


def call_hook(name: str, hook: Callable[..., None], *args: object) -> None:
    """Call a host's hook; one that raises is logged, never the turn's end."""
    try:
        hook(*args)
    except Exception as error:
        logs.warning("hook.failed", hook=name, error=f"{type(error).__name__}: {error}")
