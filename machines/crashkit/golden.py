"""Golden spines: recorded turns that must replay to their recorded state.

`replay` verifies a spine's chain, folds every turn in it (a path the table does
not allow is `HZM010`, with its remedy) and applies the resume rules to each turn
against a `FrozenJournal`, which refuses any append (`HZM062`): a settled turn must
need nothing new, so replaying it performs no effect and spends nothing. Temporal
replays committed histories the same way, and fails a wrong one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from ledger.event import Event, parse_ts
from ledger.spine import Upgrades, read_events, verify
from machines.core.fold import TurnState, fold
from machines.core.resume import prepare_resume
from machines.core.runner import Settings
from machines.errors import MachineError
from machines.stores.journal import keys_of


class FrozenJournal:
    """A journal of recorded events that refuses to grow."""

    def __init__(self, events: Sequence[Event]) -> None:
        self.events = list(events)

    def append(
        self,
        kind: str,
        data: Mapping[str, Any] | None = None,
        *,
        turn: str | None = None,
        key: str | None = None,
        short_text: Sequence[str] = (),
    ) -> Event:
        """Refuse: a replay must not write (HZM062)."""
        raise MachineError(
            "HZM062",
            f"replaying turn {turn} would append {kind}: the record is not settled under this code",
            "resume the turn with hz heinzel resume (not a replay), or record a new golden spine",
        )

    def turn_events(self, turn: str) -> list[Event]:
        """The recorded events of ``turn``."""
        return [e for e in self.events if e.turn == turn]

    def key_events(self, key: str) -> list[Event]:
        """The recorded events that speak for ``key``."""
        return [e for e in self.events if key in keys_of(e)]

    def recorded_done(self, key: str) -> str | None:
        """The hash of the last recorded ``effect.done`` for ``key``, or None."""
        done = [e for e in self.events if e.kind == "effect.done" and e.key == key]
        return str(done[-1].data.get("hash")) if done else None


async def _never(_seconds: float) -> None:
    """Replays never wait."""


def replay(path: Path, *, upgrades: Upgrades | None = None) -> dict[str, TurnState]:
    """Replay the golden spine at ``path``: every turn's recorded state, nothing new."""
    report = verify(path)
    if not report.ok:
        raise MachineError(
            "HZM061",
            f"the golden spine {path.name} does not verify ({len(report.breaks)} breaks)",
            "restore it from version control, or record it again",
        )
    events = list(read_events(path, upgrades=upgrades))
    last: datetime = parse_ts(events[-1].ts) if events else parse_ts("1970-01-01T00:00:00Z")
    settings = Settings(clock=lambda: last, sleep=_never)
    journal = FrozenJournal(events)
    turns = list(dict.fromkeys(e.turn for e in events if e.turn is not None))
    states = {}
    for turn in turns:
        states[turn] = fold(turn, journal.turn_events(turn))
        prepare_resume(journal, None, None, settings, turn=turn)
    return states
