"""The one clock of a process: the wall clock, or ``HZ_NOW`` for tests and the demo."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from heinzel.errors import HeinzelError
from ledger.event import Clock

__all__ = ["Clock", "clock_from_env", "fixed_clock", "system_clock"]


def system_clock() -> datetime:
    """The wall clock, aware and in UTC: the only place hz reads it."""
    return datetime.now(UTC)


def fixed_clock(moment: datetime) -> Clock:
    """A clock that always answers ``moment``."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)

    def now() -> datetime:
        return moment

    return now


def clock_from_env(env: Mapping[str, str]) -> Clock:
    """``HZ_NOW=<ISO 8601>`` fixes the clock; otherwise the wall clock."""
    text = env.get("HZ_NOW")
    if not text:
        return system_clock
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise HeinzelError(
            "HZH004",
            f"HZ_NOW is not an ISO 8601 time: {text!r}",
            "use a form like 2026-10-30T15:00:00Z, or unset HZ_NOW",
        ) from exc
    if not 1000 <= moment.year <= 9998:
        raise HeinzelError(
            "HZH004",
            f"HZ_NOW is outside the years 1000 to 9998: {text!r}",
            "use a form like 2026-10-30T15:00:00Z, or unset HZ_NOW",
        )
    return fixed_clock(moment)
