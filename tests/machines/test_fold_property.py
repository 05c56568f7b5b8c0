"""Any legal walk through the table folds back to the machine's own state."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from machines.core.fold import fold
from machines.core.table import TABLE
from machines.core.turn import TurnMachine
from machines.crashkit.testing import ManualClock
from machines.stores.journal import InMemoryJournal

DATA = {
    "gathered": {"step": "think"},
    "thought": {"step": "outcome"},
    "decided": {"step": "act"},
    "acted": {"step": "finish"},
    "conclude": {"disposition": "drafted"},
    "fail": {"disposition": "failed"},
    "abandon": {"disposition": "abandoned"},
    "resume": {"woken_by": "timer"},
}


class TestFoldMatchesMachine:
    @settings(derandomize=True, deadline=None, max_examples=150)
    @given(st.lists(st.integers(min_value=0, max_value=len(TABLE)), max_size=12))
    def test_every_legal_walk_folds_to_the_machine_state(self, picks: list[int]) -> None:
        """Pick legal triggers at random; after each, fold(events) equals the machine."""
        journal = InMemoryJournal(ManualClock())
        machine = TurnMachine(journal, "t1")
        for pick in picks:
            legal = sorted({r.trigger for r in TABLE if machine.state in r.sources})
            if not legal:
                break
            trigger = legal[pick % len(legal)]
            if trigger == "resume" and machine.state == "waiting":
                data = DATA["resume"]
            elif trigger == "resume":
                data = {"woken_by": "recovery"}
            else:
                data = DATA.get(trigger, {})
            machine.fire(trigger, data)
            assert fold("t1", journal.events).state == machine.state
