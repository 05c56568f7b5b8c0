"""The turn machine: the table, strictness, checkpoint-before-state."""

from __future__ import annotations

import threading

import pytest

from ledger.event import Event
from machines.core.table import STATES, TABLE
from machines.core.turn import TurnMachine
from machines.crashkit.testing import ManualClock
from machines.errors import MachineError
from machines.stores.journal import InMemoryJournal


class FailingJournal(InMemoryJournal):
    """A journal whose appends fail while ``broken`` is set."""

    broken = False

    def append(self, kind: str, data: object = None, **kwargs: object) -> Event:  # type: ignore[override]
        if self.broken:
            raise OSError("disk full")
        return super().append(kind, data, **kwargs)  # type: ignore[arg-type]


def machine(state: str = "new", waiting_step: str | None = None) -> TurnMachine:
    return TurnMachine(InMemoryJournal(ManualClock()), "t1", state=state, waiting_step=waiting_step)


class TestTurnMachine:
    def test_each_transition_appends_its_checkpoint(self) -> None:
        """start appends turn.started with the data and key given."""
        m = machine()
        event = m.fire("start", {"cause": "asked"}, key="k1")
        assert (event.kind, event.key, dict(event.data), m.state) == (
            "turn.started",
            "k1",
            {"cause": "asked"},
            "gather",
        )

    def test_an_invalid_trigger_is_a_coded_error_naming_state_and_trigger(self) -> None:
        """conclude from gather is HZM001 and names both."""
        m = machine("gather")
        with pytest.raises(MachineError) as raised:
            m.fire("conclude")
        assert raised.value.code == "HZM001"
        assert "'conclude'" in raised.value.message and "'gather'" in raised.value.message

    def test_an_unknown_trigger_is_refused(self) -> None:
        """A trigger not in the table at all is HZM001 too."""
        with pytest.raises(MachineError, match="HZM001"):
            machine().fire("to_finished")

    def test_there_are_no_automatic_to_state_triggers(self) -> None:
        """auto_transitions is off: to_finished does not exist."""
        assert not hasattr(machine()._model, "to_finished")

    def test_a_failed_append_leaves_the_state_unchanged(self) -> None:
        """When the checkpoint cannot be written the machine stays where it was."""
        journal = FailingJournal(ManualClock())
        m = TurnMachine(journal, "t1")
        m.fire("start")
        journal.broken = True
        with pytest.raises(OSError):
            m.fire("gathered", {"step": "think"})
        assert (m.state, [e.kind for e in journal.events]) == ("gather", ["turn.started"])

    def test_resume_out_of_waiting_returns_to_the_step_that_waited(self) -> None:
        """A turn that waited in think resumes into think."""
        m = machine("think")
        m.fire("wait", {"step": "think"})
        m.fire("resume", {"woken_by": "timer"})
        assert m.state == "think"

    def test_resume_out_of_a_running_state_is_the_recorded_recovery(self) -> None:
        """After a crash, resume re-enters the same step and records turn.resumed."""
        m = machine("act")
        assert m.fire("resume", {"woken_by": "recovery"}).kind == "turn.resumed"
        assert m.state == "act"

    def test_turns_built_from_one_machine_move_apart(self) -> None:
        """Turns of one thread share the machine built from the table, yet each moves
        alone, and a resume out of waiting goes by its own turn's waiting step."""
        first, second = machine(), machine()
        first.fire("start")
        assert (first.state, second.state) == ("gather", "new")
        waited_in_think, waited_in_act = machine("think"), machine("act")
        waited_in_think.fire("wait", {"step": "think"})
        waited_in_act.fire("wait", {"step": "act"})
        waited_in_act.fire("resume", {"woken_by": "timer"})
        waited_in_think.fire("resume", {"woken_by": "timer"})
        assert (waited_in_think.state, waited_in_act.state) == ("think", "act")

    def test_a_thread_builds_its_own_machine(self) -> None:
        """A turn moved in another thread uses that thread's machine (a queued machine's
        queue is never shared between threads) and moves the same way."""
        states: list[str] = []

        def run() -> None:
            m = machine()
            m.fire("start")
            states.append(m.state)
            states.append(str(m._machine is here._machine))

        here = machine()
        worker = threading.Thread(target=run)
        worker.start()
        worker.join()
        assert states == ["gather", "False"]

    def test_terminal_states_have_no_way_out(self) -> None:
        """No row leaves finished, skipped, abandoned or failed."""
        assert not [
            r for r in TABLE if set(r.sources) & {"finished", "skipped", "abandoned", "failed"}
        ]

    def test_every_state_is_reachable_from_new(self) -> None:
        """The table connects new to every state."""
        reached, frontier = {"new"}, ["new"]
        while frontier:
            state = frontier.pop()
            for row in TABLE:
                if state in row.sources and row.dest not in reached:
                    reached.add(row.dest)
                    frontier.append(row.dest)
        assert reached == set(STATES)
