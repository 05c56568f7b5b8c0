"""What may be journalled: plain JSON, checked before anything is written or performed.

A step's value goes to the body under its hash, a tool's arguments and result too, and
an `Acted`'s data onto the ``turn.finished`` line. Each is checked here first: a value
that is not plain JSON (a ``datetime``, a set, bytes, a NaN or infinite float, a key that
is not a string) is refused with `ValueRefused` ``HZM071`` before it is journalled, and
the turn fails with that code, recorded; a value that fails its Pydantic model is
``HZM072`` (`machines.api`); `Acted` data the spine's ``turn.finished`` line cannot carry
(a long ``report``, an e-mail address, a content field, a name the line owns) is
``HZM073``. None of them escapes as a bare ``TypeError`` or leaves the turn to be
resumed as if it had crashed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ledger.errors import LedgerError
from ledger.guard import checked_data
from machines.errors import MachineError

FINISHED_OWN = frozenset(
    {"disposition", "usd", "duration_ms", "reason", "step", "error", "steps", "done"}
)
"""The names of ``turn.finished`` data the machine writes itself: `Acted` data may not
(``steps`` and ``done`` are what a line carries, `machines.stores.journal.CARRIED` and ``DONE``)."""


class ValueRefused(MachineError):
    """A value refused before it is journalled (HZM071, HZM072, HZM073): the running
    turn fails with its code, recorded on ``turn.finished``."""


def _where(path: tuple[str | int, ...]) -> str:
    return "".join(f"[{part!r}]" for part in path)


_PLAIN = frozenset({str, int, bool})
"""The exact types a value's leaves mostly are: no `isinstance` chain for them."""


def _first_not_plain(value: Any, path: tuple[str | int, ...] = ()) -> str | None:
    """Where ``value`` stops being plain JSON and why, or None when it is."""
    if value is None or type(value) in _PLAIN or isinstance(value, (bool, int, str)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{_where(path)} is {value!r}"
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{_where(path)} has the key {key!r}, not a string"
            found = _first_not_plain(item, (*path, key))
            if found is not None:
                return found
        return None
    if isinstance(value, (list, tuple)):
        for n, item in enumerate(value):
            found = _first_not_plain(item, (*path, n))
            if found is not None:
                return found
        return None
    return f"{_where(path) or 'it'} is a {type(value).__name__}"


def plain_json(value: Any, what: str) -> Any:
    """``value`` when it is plain JSON; `ValueRefused` HZM071 naming ``what`` otherwise."""
    found = _first_not_plain(value)
    if found is not None:
        raise ValueRefused(
            "HZM071",
            f"{what} is not JSON: {found.strip()}",
            "return strings, finite numbers, booleans, null, lists and objects with string "
            "keys, or declare a Pydantic model for the value (machines.TypedSteps)",
        )
    return value


def acted_data(data: Any) -> dict[str, Any]:
    """`Acted` data as the ``turn.finished`` line will carry it; HZM071 when it is not
    JSON, HZM073 when the line cannot carry it."""
    if not isinstance(data, Mapping):
        raise ValueRefused(
            "HZM071",
            f"Acted data is a {type(data).__name__}, not a mapping",
            "give Acted a dict of small JSON values (a model: its model_dump(mode='json'))",
        )
    plain: dict[str, Any] = plain_json(dict(data), "Acted data")
    own = sorted(FINISHED_OWN & set(plain))
    if own:
        raise ValueRefused(
            "HZM073",
            f"Acted data names {', '.join(own)}, which turn.finished writes itself",
            "rename those fields",
        )
    try:
        checked_data(plain, ("report",))
    except LedgerError as error:
        raise ValueRefused(
            "HZM073",
            f"Acted data cannot go on the turn.finished line: {error.message}",
            "keep a short report (the one line a user reads) and ids; put content in the "
            "body through a step's value",
        ) from None
    return plain
