"""A model request's reservation in the fold: settled by its request, let go by a
release, counted in full when neither follows (a crash between request and record)."""

from __future__ import annotations

from typing import Any

from heinzel.session.spend import turn_spend
from heinzel.strings.usd import usd_text
from ledger.event import Event
from machines.core.fold import fold

TS = "2026-10-30T15:00:00.000Z"


def _events(*lines: tuple[str, dict[str, Any]]) -> list[Event]:
    started = Event(1, TS, None, "t1", "turn.started", "k", {"cause": "asked"})
    rest = [Event(n + 2, TS, None, "t1", kind, None, data) for n, (kind, data) in enumerate(lines)]
    return [started, *rest]


CASES = [
    ([("model.reserved", {"usd": 0.5}), ("model.request", {"n": 1, "usd": 0.1})], 0.1),
    ([("model.reserved", {"usd": 0.5}), ("model.released", {})], 0.0),
    ([("model.reserved", {"usd": 0.5})], 0.5),
    (
        [
            ("model.reserved", {"usd": 0.5}),
            ("turn.resumed", {"step": "think"}),
            ("model.reserved", {"usd": 0.25}),
            ("model.request", {"n": 1, "usd": 0.125}),
        ],
        0.625,
    ),
]
"""The lines of a turn and what it spent: settled, released, cut off by a crash, and cut
off then rerun after a resume (the lost reservation and the rerun's spend)."""


class TestReservations:
    def test_the_fold_counts_what_no_request_settled(self) -> None:
        """The fold's spend (a turn's end line's ``usd``) is each case's figure."""
        assert [fold("t1", _events(*lines)).spend_usd for lines, _ in CASES] == [
            spend for _, spend in CASES
        ]

    def test_the_day_reads_a_spine_as_the_fold_does(self) -> None:
        """`heinzel.session.spend.turn_spend`, what the day's spend adds for an open turn,
        agrees with the fold on every case."""
        assert [turn_spend(_events(*lines)) for lines, _ in CASES] == [s for _, s in CASES]


class TestUsdText:
    def test_a_sub_cent_spend_keeps_its_digits(self) -> None:
        """Two decimals from a cent up; below, every digit the amount needs."""
        amounts = [0.0, 0.00042, 0.008192, 0.0123, 1.5]
        assert [usd_text(a) for a in amounts] == ["0.00", "0.00042", "0.008192", "0.01", "1.50"]
