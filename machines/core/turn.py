"""The turn machine: `transitions` over the table of `machines.core.table`.

Strict: no automatic ``to_*`` triggers, queued triggers, and a trigger the table
has no row for raises `MachineError` HZM001 naming the state and the trigger. The
`transitions` machine is built from the table once per thread; each turn's model is
moved by it (``Event.trigger(model)``) without being added to it. Each
transition appends its checkpoint in ``before``: if the append raises, the state
does not change. The step's work runs after, outside the machine (`machines.core.runner`).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from transitions import EventData, Machine
from transitions.core import MachineError as TransitionsError

from ledger.event import Event
from machines.core.table import CHECKPOINT_OF, STATES, TABLE
from machines.errors import invalid_trigger
from machines.stores.journal import Journal


class _Model:
    """The object `transitions` moves between states; it carries the checkpoint to write."""

    state: str

    def __init__(self, turn_machine: TurnMachine) -> None:
        self._owner = turn_machine

    def checkpoint(self, event: EventData) -> None:
        """``before`` of every transition: append the row's event (raise = no state change)."""
        self._owner._append(event.event.name, event.kwargs)


def _waited_in(step: str) -> Any:
    """The condition of a ``resume`` row out of ``waiting``: the turn waited in ``step``."""

    def condition(event: EventData) -> bool:
        model = event.model
        return isinstance(model, _Model) and model._owner.waiting_step == step

    return condition


def _build() -> Machine:
    """The `transitions` machine of `TABLE`, with no model of its own."""
    machine = Machine(
        model=None,
        states=list(STATES),
        initial="new",
        auto_transitions=False,
        queued=True,
        send_event=True,
        before_state_change="checkpoint",
    )
    for row in TABLE:
        conditions = [] if row.when_step is None else [_waited_in(row.when_step)]
        machine.add_transition(row.trigger, list(row.sources), row.dest, conditions=conditions)
    return machine


_TRIGGERS_FROM: dict[str, frozenset[str]] = {
    state: frozenset(row.trigger for row in TABLE if state in row.sources) for state in STATES
}
"""The triggers the table has a row for out of each state (what ``get_triggers`` answers)."""

_BUILT = threading.local()


def _machine() -> Machine:
    """The machine of this thread, built from the table once: each turn's model is moved
    by it without being added to it (`Event.trigger` takes the model), so a turn costs
    no rebuild and the machine keeps no reference to a finished turn. One per thread,
    because a queued machine's one queue must not be shared between threads."""
    machine: Machine | None = getattr(_BUILT, "machine", None)
    if machine is None:
        machine = _BUILT.machine = _build()
    return machine


class TurnMachine:
    """The state of one turn, moved only by journalled transitions.

    ``state`` starts at ``new`` for a fresh turn, or at the state a fold of its
    events gave (`machines.core.resume.fold`). ``waiting_step`` is the step a waiting
    turn waited in (it picks the ``resume`` row).
    """

    def __init__(
        self,
        journal: Journal,
        turn: str,
        *,
        state: str = "new",
        waiting_step: str | None = None,
    ) -> None:
        self.journal = journal
        self.turn = turn
        self.waiting_step = waiting_step
        self.last_event: Event | None = None
        self._written: list[Event] = []
        self._model = _Model(self)
        self._machine = _machine()
        self._machine.set_state(state, model=self._model)

    @property
    def state(self) -> str:
        """The current state."""
        return self._model.state

    def fire(
        self,
        trigger: str,
        data: Mapping[str, Any] | None = None,
        *,
        key: str | None = None,
        short_text: tuple[str, ...] = (),
    ) -> Event:
        """Take ``trigger``, appending its checkpoint with ``data``; return that event.

        ``short_text`` names fields of ``data`` a user is meant to read (the spine's
        content guard allows them longer strings)."""
        state = self.state
        if trigger not in _TRIGGERS_FROM[state]:
            raise invalid_trigger(state, trigger)
        self._written = []
        try:
            moved = self._machine.events[trigger].trigger(
                self._model, data=dict(data or {}), key=key, short_text=short_text
            )
        except TransitionsError as error:
            raise invalid_trigger(state, trigger) from error
        if not moved or not self._written:
            raise invalid_trigger(state, trigger)
        if self.state == "waiting":
            self.waiting_step = state
        self.last_event = self._written[-1]
        return self.last_event

    def _append(self, trigger: str, kwargs: Mapping[str, Any]) -> None:
        self._written.append(
            self.journal.append(
                CHECKPOINT_OF[trigger],
                kwargs.get("data"),
                turn=self.turn,
                key=kwargs.get("key"),
                short_text=kwargs.get("short_text", ()),
            )
        )
