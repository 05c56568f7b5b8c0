"""The heinzel index keeps the journal cheap: turn offsets and keyed events."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from heinzel.turns import IndexedJournal, Turns, default_adapters
from machines import SpineIndex
from machines.journal import expand_carried, keys_of


class TestIndexedJournal:
    """`IndexedJournal` answers from the index what `SpineIndex.scan` finds in the spine."""

    def test_key_events_match_a_scan(self, make_service: Callable[..., Any]) -> None:
        """Every key's events, read by offset from the keys table, equal a full scan's."""
        service, heinzel_id, _ = make_service()
        Turns(service).wake(heinzel_id, "now", adapters=default_adapters(service.settings))
        scanned = SpineIndex.scan(service.home.spine_path(heinzel_id))
        with service.hold_spine(heinzel_id) as spine:
            journal = IndexedJournal(spine, service.index.db, heinzel_id)
            for key, events in scanned.keyed.items():
                read = [e for e in expand_carried(events) if key in keys_of(e)]
                assert [e.seq for e in journal.key_events(key)] == [e.seq for e in read]
            for turn, offset in scanned.turn_offsets.items():
                assert journal.turn_offset(turn) == offset

    def test_a_reindex_rebuilds_the_keys(self, make_service: Callable[..., Any]) -> None:
        """The keys table is derived: a rebuild gives the same rows."""
        service, heinzel_id, _ = make_service()
        Turns(service).wake(heinzel_id, "now", adapters=default_adapters(service.settings))
        query = "SELECT key, seq, line_offset, kind FROM keys ORDER BY key, seq"
        before = [dict(r) for r in service.index.db.query(query)]
        service.reindex()
        assert [dict(r) for r in service.index.db.query(query)] == before
        assert before
