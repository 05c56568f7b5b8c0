"""The lifecycle of a Heinzelmännchen (ADR 0049 statement 7), kept by a state machine.

States: ``proposed`` (version 1 not yet approved), ``asleep``, ``awake`` (a turn
runs), ``waiting`` (a turn waits, or a draft, question or amendment awaits the
user), ``paused`` (by the user) and ``retired`` (kept, never woken).

The transition table is data; ``transitions`` enforces it with no automatic
``to_*`` triggers, so a command that makes no sense in the current state (pausing
a retired one, approving one twice) is refused with a coded error instead of
quietly doing something.
"""

from __future__ import annotations

from typing import Any, Final

from transitions import Machine, MachineError

from heinzel.errors import HeinzelError

__all__ = ["STATES", "TRANSITIONS", "Lifecycle"]

STATES: Final = ("proposed", "asleep", "awake", "waiting", "paused", "retired")

# trigger, sources, destination
TRANSITIONS: Final[tuple[tuple[str, tuple[str, ...], str], ...]] = (
    ("approve", ("proposed",), "asleep"),
    ("wake", ("asleep", "waiting"), "awake"),
    ("wait", ("awake", "asleep"), "waiting"),
    ("settle", ("awake", "waiting"), "asleep"),
    ("pause", ("proposed", "asleep", "awake", "waiting"), "paused"),
    ("unpause", ("paused",), "asleep"),
    ("retire", ("proposed", "asleep", "awake", "waiting", "paused"), "retired"),
    ("unretire", ("retired",), "asleep"),
)

_VERBS: Final = {
    "approve": "approve",
    "wake": "wake",
    "wait": "wait",
    "settle": "put to sleep",
    "pause": "pause",
    "unpause": "unpause",
    "retire": "retire",
    "unretire": "unretire",
}


class Lifecycle:
    """One Heinzelmännchen's lifecycle state; ``fire`` applies a trigger or refuses it."""

    state: str

    def __init__(self, state: str = "proposed") -> None:
        if state not in STATES:
            raise ValueError(f"unknown lifecycle state {state!r}")
        self._machine = Machine(
            model=self,
            states=list(STATES),
            transitions=[
                {"trigger": trigger, "source": list(sources), "dest": dest}
                for trigger, sources, dest in TRANSITIONS
            ],
            initial=state,
            auto_transitions=False,
            queued=True,
        )

    def can(self, trigger: str) -> bool:
        """Whether ``trigger`` is allowed from the current state."""
        return any(t == trigger and self.state in s for t, s, _ in TRANSITIONS)

    def fire(self, trigger: str, name: str = "") -> str:
        """Apply ``trigger``; return the new state, or raise HZH050 naming both."""
        if trigger not in _VERBS:
            raise ValueError(f"unknown lifecycle trigger {trigger!r}")
        who = f"{name} " if name else ""
        try:
            method: Any = getattr(self, trigger)
            method()
        except MachineError as exc:
            raise HeinzelError(
                "HZH050",
                f"cannot {_VERBS[trigger]} {who}while it is {self.state}",
                _hint(self.state).replace("NAME", name or "NAME"),
            ) from exc
        return self.state


def _hint(state: str) -> str:
    """The one user command that gets past ``state`` (never an internal transition)."""
    if state == "retired":
        return "a retired Heinzelmännchen never wakes; `hz heinzel unretire NAME` brings it back"
    if state == "proposed":
        return "approve version 1 first: `hz approve NAME`"
    if state == "paused":
        return "`hz heinzel unpause NAME` first"
    if state == "awake":
        return (
            "a turn is running; `hz heinzel stop NAME` stops it (one a dead process left "
            "open is finished by `hz system daemon tick`)"
        )
    if state == "waiting":
        return "a turn waits; `hz heinzel resume NAME` goes on with it now"
    return "`hz heinzel show NAME` shows its state and what is pending"
