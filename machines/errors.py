"""The coded errors of `machines` (``HZM0xx``), each with a message and a remedy.

Every code is listed in ``docs/errors.md`` under ``## machines (HZM)``.
"""

from __future__ import annotations

from ledger.errors import HzError


class MachineError(HzError):
    """A failure of the turn machine, its effects, waits or resume (codes ``HZM0xx``)."""


def invalid_trigger(state: str, trigger: str) -> MachineError:
    """HZM001: a trigger the transition table has no row for in this state."""
    return MachineError(
        "HZM001",
        f"the turn machine cannot {trigger!r} from state {state!r}",
        "this is a bug in the caller: see docs/turn-machine.md for the legal transitions",
    )


def bad_key_part(part: str, value: str) -> MachineError:
    """HZM003: a value that cannot be part of an idempotency key."""
    return MachineError(
        "HZM003",
        f"the {part} {value!r} cannot be part of a key (empty, or contains '@' or whitespace)",
        "pass the bare id, slot, input or request id",
    )
