"""The turn machine: `transitions` over the table of `machines.table`.

Strict: no automatic ``to_*`` triggers, queued triggers, and a trigger the table
has no row for raises `MachineError` HZM001 naming the state and the trigger. Each
transition appends its checkpoint in ``before``: if the append raises, the state
does not change. The step's work runs after, outside the machine (`machines.runner`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from transitions import EventData, Machine
from transitions.core import MachineError as TransitionsError

from ledger.event import Event
from machines.errors import invalid_trigger
from machines.journal import Journal
from machines.table import CHECKPOINT_OF, STATES, TABLE


class _Model:
    """The object `transitions` moves between states; it carries the checkpoint to write."""

    state: str

    def __init__(self, turn_machine: TurnMachine) -> None:
        self._owner = turn_machine

    def checkpoint(self, event: EventData) -> None:
        """``before`` of every transition: append the row's event (raise = no state change)."""
        self._owner._append(event.event.name, event.kwargs)


class TurnMachine:
    """The state of one turn, moved only by journalled transitions.

    ``state`` starts at ``new`` for a fresh turn, or at the state a fold of its
    events gave (`machines.resume.fold`). ``waiting_step`` is the step a waiting
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
        self._machine = Machine(
            model=self._model,
            states=list(STATES),
            initial=state,
            auto_transitions=False,
            queued=True,
            send_event=True,
            before_state_change="checkpoint",
        )
        for row in TABLE:
            conditions: list[Any] = []
            if row.when_step is not None:
                step = row.when_step
                conditions.append(lambda _event, step=step: self.waiting_step == step)
            self._machine.add_transition(
                row.trigger, list(row.sources), row.dest, conditions=conditions
            )

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
        if trigger not in self._machine.get_triggers(state):
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
