"""Old event kinds, migrated in memory on read; the spine file is never rewritten.

`upgrades()` is the registry every reader of a turn passes to
``ledger.spine.read_events`` (through `SpineJournal`). Vocabulary version 1 is the
first, so it has no old kinds yet; when a payload changes incompatibly, the new
kind gets a new name (``draft.placed.2``) and its migration is registered here,
e.g. ``registry.register("draft.placed", "draft.placed.2", fn)``.
"""

from __future__ import annotations

from ledger.spine import Upgrades


def upgrades() -> Upgrades:
    """A fresh registry of every migration `machines` knows."""
    return Upgrades()
