"""The production `Journal`: a `ledger.spine.Spine`, read a turn at a time.

A resume must not scan the whole spine. `SpineIndex` remembers where each turn's
first line starts (``Event.offset``) and the events that speak for each key; the
host keeps it in its own derived index and passes it back (`SpineIndex.scan` builds
it with one pass, for hosts without one and for tests). `turn_events` then reads
from the turn's first line only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ledger.event import Event
from ledger.spine import Spine, Upgrades, read_events
from machines.errors import MachineError
from machines.journal import keys_of


@dataclass
class SpineIndex:
    """Where each turn starts in the spine, and the events each key has."""

    turn_offsets: dict[str, int] = field(default_factory=dict)
    keyed: dict[str, list[Event]] = field(default_factory=dict)

    def add(self, event: Event) -> None:
        """Take in one event (call it for every event, in order)."""
        if event.turn is not None:
            self.turn_offsets.setdefault(event.turn, event.offset)
        for key in keys_of(event):
            self.keyed.setdefault(key, []).append(event)

    @classmethod
    def scan(cls, path: Path, *, upgrades: Upgrades | None = None) -> SpineIndex:
        """Build the index with one pass over the spine at ``path``."""
        index = cls()
        for event in read_events(path, upgrades=upgrades):
            index.add(event)
        return index


class SpineJournal:
    """A `Journal` over an open spine (the caller holds the spine's lock)."""

    def __init__(
        self,
        spine: Spine,
        index: SpineIndex | None = None,
        *,
        upgrades: Upgrades | None = None,
    ) -> None:
        self.spine = spine
        self.index = index if index is not None else SpineIndex()
        self.upgrades = upgrades

    def append(
        self,
        kind: str,
        data: Mapping[str, Any] | None = None,
        *,
        turn: str | None = None,
        key: str | None = None,
        short_text: Sequence[str] = (),
    ) -> Event:
        """Append durably through the spine (its on_durable callbacks run)."""
        event = self.spine.append(kind, data, turn=turn, key=key, short_text=short_text)
        self.index.add(event)
        return event

    def turn_offset(self, turn: str) -> int | None:
        """Where ``turn``'s first line starts, for the host to keep in its index."""
        return self.index.turn_offsets.get(turn)

    def turn_events(self, turn: str) -> list[Event]:
        """The turn's events, read from its first line on (HZM060 if unknown)."""
        offset = self.index.turn_offsets.get(turn)
        if offset is None:
            raise MachineError(
                "HZM060",
                f"the start of turn {turn} in the spine is not known",
                "pass the turn's offset from your index (SpineIndex), or build one with "
                "SpineIndex.scan",
            )
        events = read_events(self.spine.path, from_offset=offset, upgrades=self.upgrades)
        return [e for e in events if e.turn == turn]

    def key_events(self, key: str) -> list[Event]:
        """Every event that speaks for ``key``, from the index."""
        return list(self.index.keyed.get(key, ()))
