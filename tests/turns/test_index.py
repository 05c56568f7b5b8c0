"""The heinzel index keeps the journal cheap: turn offsets and keyed events."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from heinzel.turns import IndexedJournal, Turns, default_adapters
from ledger.spine import read_events
from machines import SpineIndex
from machines.stores.journal import expand_carried, keys_of
from machines.stores.spine_journal import done_in_file


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


class TestCarriedEffectEnd:
    """`IndexedJournal` holds an effect's ``effect.done`` and ``draft.placed`` for the turn's
    next line (docs/spine.md, "An effect's end carried by the next line")."""

    @staticmethod
    def _start(journal: IndexedJournal, turn: str, key: str) -> None:
        journal.append("turn.started", {"cause": "asked"}, turn=turn, key=f"{turn}@wake")
        journal.append("effect.started", {"effect": "place_draft"}, turn=turn, key=key)
        journal.append("effect.done", {"hash": "sha256:aa"}, turn=turn, key=key)
        placed = {"asset": "file:/w/r.md", "output": "s", "hash": "sha256:aa"}
        journal.append("draft.placed", placed, turn=turn, key=key)

    def test_the_next_line_carries_it_and_every_lookup_finds_it(
        self, make_service: Callable[..., Any]
    ) -> None:
        service, heinzel_id, _ = make_service()
        key = f"{heinzel_id}@v1@slot@file:/w/r.md"
        with service.hold_spine(heinzel_id) as spine:
            journal = IndexedJournal(spine, service.index.db, heinzel_id)
            self._start(journal, "tn-1", key)
            held = ["effect.started", "effect.done", "draft.placed"]
            assert journal.recorded_done(key) == "sha256:aa"  # held: from memory
            assert [e.kind for e in journal.key_events(key)] == held
            finished = {"disposition": "drafted", "duration_ms": 0}
            journal.append("turn.finished", finished, turn="tn-1")
            lines = [e for e in read_events(spine.path) if e.turn == "tn-1"]
            assert [e.kind for e in lines] == ["turn.started", "effect.started", "turn.finished"]
            assert lines[-1].data["done"] == {
                key: {"hash": "sha256:aa", "draft.placed": {"asset": "file:/w/r.md", "output": "s"}}
            }
            assert journal.recorded_done(key) == "sha256:aa"  # the byte search
            assert done_in_file(spine.path, key) == "sha256:aa"
            assert [e.kind for e in journal.key_events(key)] == held  # the keys table
        [row] = service.index.db.query("SELECT asset, output, hash FROM drafts")
        assert row == {"asset": "file:/w/r.md", "output": "s", "hash": "sha256:aa"}

    def test_a_line_of_no_turn_or_a_turn_that_raised_writes_it_out_first(
        self, make_service: Callable[..., Any]
    ) -> None:
        """Another line comes first (``heinzel.paused``, of no turn), or nothing does:
        the held end is written as its own lines, in its place, as before."""
        service, heinzel_id, _ = make_service()
        key = f"{heinzel_id}@v1@slot@file:/w/r.md"
        with service.hold_spine(heinzel_id) as spine:
            journal = IndexedJournal(spine, service.index.db, heinzel_id)
            self._start(journal, "tn-1", key)
            journal.append("heinzel.paused", {})
            self._start(journal, "tn-2", key + "2")
            journal.write_held()
            kinds = [e.kind for e in read_events(spine.path)][-7:]
        assert kinds == [
            "effect.done",
            "draft.placed",
            "heinzel.paused",
            "turn.started",
            "effect.started",
            "effect.done",
            "draft.placed",
        ]

    def test_two_ends_in_a_row_keep_their_order(self, make_service: Callable[..., Any]) -> None:
        """Two effects ended with no line between them (a settling act probes each): the
        first is written out as its own lines, the second rides on the turn's end; read
        back, both are there, in order."""
        service, heinzel_id, _ = make_service()
        one, two = (f"{heinzel_id}@v1@slot@file:/w/{n}.md" for n in ("a", "b"))
        with service.hold_spine(heinzel_id) as spine:
            journal = IndexedJournal(spine, service.index.db, heinzel_id)
            self._start(journal, "tn-1", one)
            journal.append("effect.started", {"effect": "place_draft"}, turn="tn-1", key=two)
            journal.append("effect.done", {"hash": "sha256:bb"}, turn="tn-1", key=two)
            placed = {"asset": "file:/w/b.md", "output": "s", "hash": "sha256:bb"}
            journal.append("draft.placed", placed, turn="tn-1", key=two)
            journal.append("turn.finished", {"disposition": "drafted"}, turn="tn-1")
            lines = list(read_events(spine.path))
            assert journal.recorded_done(one) == "sha256:aa"
            assert journal.recorded_done(two) == "sha256:bb"
        read = [(e.kind, e.key) for e in expand_carried(lines) if e.turn == "tn-1"]
        assert read[1:] == [
            ("effect.started", one),
            ("effect.done", one),
            ("draft.placed", one),
            ("effect.started", two),
            ("effect.done", two),
            ("draft.placed", two),
            ("turn.finished", None),
        ]

    def test_two_ends_with_no_line_between_keep_their_order(
        self, make_service: Callable[..., Any]
    ) -> None:
        """Two effects started, then both ended (a settling act): the first end is written
        as its own lines before the second, which rides on the turn's end."""
        service, heinzel_id, _ = make_service()
        one, two = (f"{heinzel_id}@v1@slot@file:/w/{n}.md" for n in ("a", "b"))
        with service.hold_spine(heinzel_id) as spine:
            journal = IndexedJournal(spine, service.index.db, heinzel_id)
            journal.append("turn.started", {"cause": "asked"}, turn="tn-1", key="tn-1@wake")
            for key in (one, two):
                journal.append("effect.started", {"effect": "place_draft"}, turn="tn-1", key=key)
            for key, digest in ((one, "sha256:aa"), (two, "sha256:bb")):
                journal.append(
                    "effect.done", {"hash": digest, "probed": True}, turn="tn-1", key=key
                )
                placed = {"asset": key[-9:], "output": "s", "hash": digest}
                journal.append("draft.placed", placed, turn="tn-1", key=key)
            journal.append("turn.finished", {"disposition": "abandoned"}, turn="tn-1")
            lines = [e for e in read_events(spine.path) if e.turn == "tn-1"]
        assert [e.kind for e in lines] == [
            "turn.started",
            "effect.started",
            "effect.started",
            "effect.done",
            "draft.placed",
            "turn.finished",  # carries the second end
        ]
        read = [(e.kind, e.key, e.data.get("hash")) for e in expand_carried(lines)]
        assert read[3:] == [
            ("effect.done", one, "sha256:aa"),
            ("draft.placed", one, "sha256:aa"),
            ("effect.done", two, "sha256:bb"),
            ("draft.placed", two, "sha256:bb"),
            ("turn.finished", None, None),
        ]
