"""Schedule slots: cron expressions evaluated in the contract's time zone (croniter)."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from croniter import croniter

__all__ = ["next_slot"]


def next_slot(schedule: str | None, timezone: str | None, after: datetime) -> datetime | None:
    """The first slot strictly after ``after``, in UTC; ``None`` without a schedule."""
    if not schedule:
        return None
    zone = ZoneInfo(timezone or "UTC")
    local: datetime = croniter(schedule, after.astimezone(zone)).get_next(datetime)
    return local.astimezone(UTC)
