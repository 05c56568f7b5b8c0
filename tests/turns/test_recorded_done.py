"""The effect ledger's last word on a key (`IndexedJournal.recorded_done`) reads the index
and the bytes after its watermark, not the whole spine, and still finds any done key."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from heinzel.turns import IndexedJournal
from ledger.spine import Spine


def _filled(make_service: Callable[..., Any]) -> tuple[Any, str]:
    """A session whose spine holds an ``effect.done`` for ``k-old`` under 200 later lines."""
    service, heinzel_id, _ = make_service()
    service.append(heinzel_id, "effect.done", {"hash": "h-old"}, key="k-old")
    for n in range(200):
        service.append(heinzel_id, "usage", {"tokens": n})
    return service, heinzel_id


def test_a_key_done_long_ago_is_found_from_the_index_alone(
    make_service: Callable[..., Any],
) -> None:
    """With the index current, nothing after its watermark is left to search, and the
    old done line is found from the keys table and read back at its offset."""
    service, heinzel_id = _filled(make_service)
    with service.open_spine(heinzel_id) as spine:
        journal = IndexedJournal(spine, service.index.db, heinzel_id)
        assert journal.indexed_to() == os.path.getsize(spine.path)
        assert journal.recorded_done("k-old") == "h-old"
        assert journal.recorded_done("k-never") is None
        spine.append("effect.done", {"hash": "h-again"}, key="k-old")
        assert journal.recorded_done("k-old") == "h-again"


def test_lines_the_index_has_not_taken_in_are_searched_in_the_file(
    make_service: Callable[..., Any],
) -> None:
    """A done line written past the index (a writer without its hook) is found by the
    byte search of the bytes after the watermark line."""
    service, heinzel_id = _filled(make_service)
    directory = service.home.session_dir(heinzel_id)
    with Spine.open(directory, clock=service.clock) as bare:
        bare.append("effect.done", {"hash": "h-new"}, key="k-new")
        journal = IndexedJournal(bare, service.index.db, heinzel_id)
        assert 0 < journal.indexed_to() < os.path.getsize(bare.path)
        assert journal.recorded_done("k-new") == "h-new"
        assert journal.recorded_done("k-old") == "h-old"


def test_a_watermark_the_file_does_not_hold_searches_the_whole_file(
    make_service: Callable[..., Any],
) -> None:
    """When the watermark's line is not in the file as the index saw it, the index
    vouches for nothing: the whole file is searched, and the keys table is not trusted."""
    service, heinzel_id = _filled(make_service)
    db = service.index.db
    with service.open_spine(heinzel_id) as spine:
        db.execute("DELETE FROM keys WHERE heinzel = ? AND key = 'k-old'", [heinzel_id])
        db.execute("UPDATE _watermarks SET hash = ? WHERE source = ?", ["0" * 64, heinzel_id])
        journal = IndexedJournal(spine, db, heinzel_id)
        assert journal.indexed_to() == 0
        assert journal.recorded_done("k-old") == "h-old"
