"""Verifying a spine: the whole chain, line by line, with every break named by seq.

Each complete line is checked in this order, and gets at most one break:
``invalid-json`` (not UTF-8 JSON), ``bad-envelope`` (not the fixed key set and
types), ``non-canonical`` (the bytes are not the canonical serialisation),
``seq-gap`` (not the seq expected at that place) and ``prev-mismatch`` (the
chain link). Bytes after the last newline are a ``torn-tail``.

A break is reported at the seq the damaged line holds in the chain (its place),
so one flipped bit names one seq. A line whose bytes were changed after the
next line chained to them is found through the next line's ``prev``: when that
``prev`` differs from the line's hash in many hex digits, the line itself was
altered and is named; when in a few, the ``prev`` field was. A line that follows
a broken one is not blamed for the broken one's hash. The last line's content
can be altered undetectably while it stays a valid envelope: nothing chains to
it yet.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import field, replace
from pathlib import Path
from typing import Literal

from ledger.event import sha256_hex
from ledger.reading import check_line, iter_lines, spine_file
from ledger.records import frozen_record, mutable_record

__all__ = ["BREAK_CONTAINED", "Break", "BreakReason", "VerifyReport", "verify"]

BreakReason = Literal[
    "torn-tail", "invalid-json", "seq-gap", "prev-mismatch", "non-canonical", "bad-envelope"
]
BREAK_CONTAINED = "spine.break_contained"
_FEW_DIGITS = 8


@frozen_record
class Break:
    """One place where the chain does not hold. ``contained`` says a
    ``spine.break_contained`` event already records it."""

    seq: int
    offset: int
    reason: BreakReason
    detail: str
    contained: bool = False


@frozen_record
class VerifyReport:
    """What verify found: ``count`` complete lines, the last one's place (its
    seq in the chain, hash and offset), and the breaks in file order."""

    ok: bool
    count: int
    last_seq: int | None
    last_hash: str | None
    last_offset: int | None
    breaks: list[Break] = field(default_factory=list)

    @property
    def first(self) -> Break | None:
        """The first break, or None when the chain holds."""
        return self.breaks[0] if self.breaks else None

    def uncontained(self) -> list[Break]:
        """Breaks no ``spine.break_contained`` event records yet (a torn tail never is)."""
        return [item for item in self.breaks if not item.contained]


def _differing_digits(left: str, right: str) -> int:
    return sum(a != b for a, b in zip(left, right, strict=True))


@mutable_record
class _Walk:
    """The state of one pass over the lines."""

    expected_seq: int = 1
    expected_prev: str | None = None
    previous: tuple[int, int, bool] | None = None  # seq, offset, broken
    breaks: list[Break] = field(default_factory=list)
    recorded: set[tuple[int, str]] = field(default_factory=set)
    count: int = 0
    last_hash: str | None = None
    last_offset: int | None = None

    def line(self, offset: int, body: bytes) -> None:
        place = self.expected_seq
        obj, problem, detail = check_line(body)
        reason: BreakReason | None = problem
        following = place + 1
        if reason is None and obj is not None:
            seq, prev = obj["seq"], obj["prev"]
            chained = prev == self.expected_prev
            if seq != place:
                reason, detail = "seq-gap", f"expected seq {place}, found {seq}"
                # An intact link means only the seq field is wrong: keep counting places.
                following = place + 1 if chained else seq + 1
            else:
                following = seq + 1
            if reason is None and not chained:
                reason, detail = self._link(prev, place)
            if obj["kind"] == BREAK_CONTAINED and reason is None:
                data = obj["data"]
                self.recorded.add((data.get("seq"), data.get("reason")))
        elif obj is not None and reason == "non-canonical":
            following = obj["seq"] + 1
        if reason is not None:
            self.breaks.append(Break(place, offset, reason, detail))
        digest = sha256_hex(body)
        self.previous = (place, offset, reason is not None)
        self.expected_prev = digest
        self.expected_seq = following
        self.count += 1
        self.last_hash = digest
        self.last_offset = offset

    def _link(self, prev: str | None, place: int) -> tuple[BreakReason | None, str]:
        """Blame the broken link on this line's prev field or on the previous line."""
        expected = self.expected_prev
        if (
            prev is not None
            and expected is not None
            and _differing_digits(prev, expected) <= _FEW_DIGITS
        ):
            return "prev-mismatch", "this line's prev field was altered"
        if self.previous is None:
            return "prev-mismatch", "the first line's prev is not null"
        seq, offset, broken = self.previous
        if not broken:
            self.breaks.append(
                Break(
                    seq,
                    offset,
                    "prev-mismatch",
                    f"the line was altered after seq {place} chained to it",
                )
            )
        return None, ""

    def report(self) -> VerifyReport:
        breaks = [
            replace(item, contained=True) if (item.seq, item.reason) in self.recorded else item
            for item in self.breaks
        ]
        return VerifyReport(
            ok=not breaks,
            count=self.count,
            last_seq=self.expected_seq - 1 if self.count else None,
            last_hash=self.last_hash,
            last_offset=self.last_offset,
            breaks=breaks,
        )


def verify_lines(lines: Iterable[tuple[int, bytes]]) -> VerifyReport:
    """Verify ``(offset, bytes)`` lines as `iter_lines` yields them."""
    walk = _Walk()
    for offset, raw in lines:
        if not raw.endswith(b"\n"):
            walk.breaks.append(
                Break(
                    walk.expected_seq,
                    offset,
                    "torn-tail",
                    f"{len(raw)} bytes after the last complete line",
                )
            )
            break
        walk.line(offset, raw[:-1])
    return walk.report()


def verify(path: Path) -> VerifyReport:
    """Check the whole chain of the spine at ``path`` (the file or its directory;
    read-only, no lock)."""
    return verify_lines(iter_lines(spine_file(path)))
