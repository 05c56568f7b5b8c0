"""The production `Journal`: a `ledger.spine.Spine`, read a turn at a time.

A resume must not scan the whole spine. `SpineIndex` remembers where each turn's
first line starts (``Event.offset``), the events that speak for each key, and the
seq and line hash of the last line it took in. The order of opening is fixed:
open the `Spine` first (it takes the lock and contains a torn tail), then build
or load the index, then the journal: ``SpineJournal(spine, SpineIndex.scan(spine.path))``
or ``SpineJournal.open(spine)``. The journal refuses an index whose last line is
not the spine's last line (HZM063): an index that missed lines would answer "no
such key" for a key that is done, and a finished turn would run again.
`SpineIndex.scan` refuses a path with no spine (HZM064).

Even with an agreeing index, `recorded_done` answers from the spine file itself,
so the effect ledger never performs a key the spine records as done: the bytes a
`SpineIndex.scan` read are answered from the ``effect.done`` lines it read there
(``scanned_done``, apart from the keys the index serves), the rest (lines appended
since, or every line for an index built otherwise) by a byte search for the key.

A process that runs one turn after another on a spine keeps the index of its last
journal and passes it to the next open (``SpineJournal.open(spine, index=held)``,
`SpineIndex.catch_up`): when the spine's last line (which `Spine.open` read from the
file) is the held index's last line, no line is read; when other lines follow it, only
they are; otherwise (the file does not hold that line as it was) the spine is scanned.
Each line carries the hash of the one before, so a file that ends in the index's last
line holds every line the index took in: what its own journal appended counts then as
read from the file (``scanned_done``), as a scan would have read it.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Mapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import Any

from ledger.errors import LedgerError
from ledger.event import Event, canonical, sha256_hex
from ledger.lazy import lazy_pattern
from ledger.reading import iter_lines, parse_event, spine_file
from ledger.records import mutable_record
from ledger.spine import Spine, Upgrades, read_events
from machines.errors import MachineError
from machines.stores.journal import DONE, expand_carried, keys_of, lines_of
from machines.vocabulary import TERMINAL_KINDS


@mutable_record
class SpineIndex:
    """Where each turn starts in the spine, the events each key has, and the last line.

    ``complete`` is False for `SpineIndex.at_tail`: an index that starts empty at
    the spine's tail because the host's own derived index answers for the lines
    before it (the journal then refuses to guess a turn's start: HZM060).
    ``scanned_to``: every line of the spine file that starts before this offset was
    read by `scan` (0 for an index built any other way), and ``scanned_done`` holds
    the hash of the last ``effect.done`` it read there for each key: what the file
    said, kept apart from ``keyed`` (which a host may prune or fill).
    """

    turn_offsets: dict[str, int] = field(default_factory=dict)
    keyed: dict[str, list[Event]] = field(default_factory=dict)
    last_seq: int = 0
    last_hash: str | None = None
    complete: bool = True
    scanned_to: int = field(default=0, compare=False)
    scanned_done: dict[str, str] = field(default_factory=dict, compare=False)
    last_offset: int = field(default=0, compare=False)
    """Where the last line taken in starts."""
    taken_done: dict[str, str] = field(default_factory=dict, compare=False)
    """The ``effect.done`` hash per key taken in (`add`) after ``scanned_to``: counted as
    read from the file once the file is seen to end in a line taken in after them."""
    turn_ends: dict[str, int] = field(default_factory=dict)
    """The seq of each turn's end (its first line of `TERMINAL_KINDS`): with ``keyed``
    (which holds a key's ``turn.started``) the key rule's whole answer, no spine read."""
    turn_final: dict[str, Event] = field(default_factory=dict, compare=False)
    """Each ended turn's end line itself: with the key's ``turn.started`` (in ``keyed``)
    what a host answers for a finished job without reading the spine (`machines.api.Host`)."""
    broken: bool = field(default=False, compare=False)
    """A line read by `scan` or `catch_up` did not chain to the one before it, or was no
    envelope: `SpineJournal.open` contains the break."""
    damaged: list[int] = field(default_factory=list, compare=False)
    """Offsets of the lines that were no envelope (``skip_damaged``), left out."""

    def add(self, event: Event) -> None:
        """Take in one event (call it for every event, in order)."""
        if event.turn is not None:
            self.turn_offsets.setdefault(event.turn, event.offset)
            if event.kind in TERMINAL_KINDS:
                self.turn_ends.setdefault(event.turn, event.seq)
                self.turn_final.setdefault(event.turn, event)
        for key in keys_of(event):
            self.keyed.setdefault(key, []).append(event)
        for one in lines_of(event):  # an effect's end the line carries, too
            if one.kind == "effect.done" and one.key is not None:
                self.taken_done[one.key] = str(one.data.get("hash"))
        self.last_seq, self.last_hash, self.last_offset = event.seq, event.hash, event.offset

    def _read_to_last(self) -> None:
        """Every line taken in is in the file as taken in: count them as scanned."""
        self.scanned_done.update(self.taken_done)
        self.taken_done.clear()
        self.scanned_to = self.last_offset

    @classmethod
    def scan(
        cls, path: Path, *, upgrades: Upgrades | None = None, skip_damaged: bool = False
    ) -> SpineIndex:
        """Build the index with one pass over the spine at ``path`` (the file or
        its directory); HZM064 when there is no spine there."""
        file = spine_file(path)
        if not file.is_file():
            raise MachineError(
                "HZM064",
                f"there is no spine at {path}",
                "open the spine first (Spine.open creates it), then scan spine.path",
            )
        index = cls()
        index._take(file, 0, upgrades=upgrades, skip_damaged=skip_damaged)
        index._read_to_last()  # the last line is searched again: harmless, and never missed
        return index

    def _take(
        self, file: Path, start: int, *, upgrades: Upgrades | None, skip_damaged: bool
    ) -> None:
        """Take in every complete line of ``file`` from ``start`` (a line start after the
        last line taken in), checking that each chains to the one before it (its ``prev``
        is that line's hash, its seq the next): a line that does not sets ``broken``.

        A line with no key and no ``data.keys`` that does not end a turn gives the index
        only its turn's first offset: it is read from the end of its canonical envelope
        (`_plain`) instead of parsed. A line that is not an envelope is HZL030, or with
        ``skip_damaged`` left out and its offset kept in ``damaged``."""
        prev, seq = self.last_hash, self.last_seq
        for offset, raw in iter_lines(file, start):
            if not raw.endswith(b"\n"):
                return  # a torn tail: the spine's writer contains it
            body = raw[:-1]
            plain = _plain(body, upgrades)
            if plain is not None:
                turn, line_prev, line_seq = plain
                digest = sha256_hex(body)
                if turn is not None:
                    self.turn_offsets.setdefault(turn, offset)
                self.last_seq, self.last_hash, self.last_offset = line_seq, digest, offset
            else:
                event = parse_event(body, offset)
                if event is None:
                    if not skip_damaged:
                        raise LedgerError(
                            "HZL030",
                            f"the line at byte {offset} of {file} is not a spine envelope",
                            "run verify on this spine to see the break; the writer keeps "
                            "appending after it",
                        )
                    self.damaged.append(offset)
                    self.broken = True
                    prev, seq = sha256_hex(body), seq + 1
                    continue
                line_prev, line_seq, digest = event.prev, event.seq, event.hash
                self.add(upgrades.upgrade(event) if upgrades is not None else event)
            if line_prev != prev or line_seq != seq + 1:
                self.broken = True
            prev, seq = digest, line_seq

    @classmethod
    def catch_up(
        cls,
        held: SpineIndex,
        spine: Spine,
        *,
        upgrades: Upgrades | None = None,
        skip_damaged: bool = False,
    ) -> SpineIndex:
        """``held`` (the index of an earlier journal over this spine, whose spine was
        closed) brought up to ``spine``'s end, reading only the lines after its last
        line; a new `scan` when the file does not hold that line as it was (or ``held``
        is not complete)."""
        last = spine.last
        if held.complete and held.last_seq and last is not None:
            if (last.seq, last.hash, last.offset) == (
                held.last_seq,
                held.last_hash,
                held.last_offset,
            ):
                held._read_to_last()
                return held
            after = _after_line(spine.path, held.last_offset, held.last_hash)
            if after is not None:
                held._read_to_last()
                held._take(spine.path, after, upgrades=upgrades, skip_damaged=skip_damaged)
                held._read_to_last()
                return held
        return cls.scan(spine.path, upgrades=upgrades, skip_damaged=skip_damaged)

    @classmethod
    def at_tail(cls, spine: Spine) -> SpineIndex:
        """An empty index positioned at ``spine``'s last line, for a host whose own
        derived index (kept by the spine's ``on_durable``) answers for the lines
        before; its journal must override `SpineJournal.turn_offset` and
        `SpineJournal.key_events` to ask that index."""
        last = spine.last
        return cls(
            last_seq=last.seq if last else 0,
            last_hash=last.hash if last else None,
            complete=False,
        )


def _disagrees(index: SpineIndex, spine: Spine) -> str | None:
    """Why the index is not an index of the spine as it is now, or None."""
    last = spine.last
    if last is None:
        empty = os.stat(spine.path).st_size == 0
        if empty and index.last_seq == 0:
            return None
        if empty:
            return f"the spine is empty but the index has seen seq {index.last_seq}"
        return "the spine's last line is damaged"
    if (index.last_seq, index.last_hash) != (last.seq, last.hash):
        return (
            f"the index ends at seq {index.last_seq}, the spine at seq {last.seq} "
            f"(hash {last.hash[:12]})"
        )
    return None


class SpineJournal:
    """A `Journal` over an open spine (the caller holds the spine's lock).

    ``index`` is required and must end where the spine ends (HZM063 otherwise).
    """

    def __init__(
        self,
        spine: Spine,
        index: SpineIndex,
        *,
        upgrades: Upgrades | None = None,
    ) -> None:
        if not isinstance(index, SpineIndex):
            raise MachineError(
                "HZM063",
                "a SpineJournal was built without a SpineIndex",
                "pass SpineIndex.scan(spine.path), or use SpineJournal.open(spine)",
            )
        why = _disagrees(index, spine)
        if why is not None:
            raise MachineError(
                "HZM063",
                f"the index does not match the spine {spine.path}: {why}",
                "rebuild it after opening the spine: SpineIndex.scan(spine.path), "
                "or use SpineJournal.open(spine)",
            )
        self.spine = spine
        self.index = index
        self.upgrades = upgrades

    @classmethod
    def open(
        cls, spine: Spine, *, index: SpineIndex | None = None, upgrades: Upgrades | None = None
    ) -> SpineJournal:
        """The journal over ``spine`` with an index scanned from it (one pass), or with
        ``index`` (an earlier journal's, held by the caller) caught up with it
        (`SpineIndex.catch_up`: only the lines after the index's last line are read).

        The lines read are checked to chain; a break (a line that is no envelope, or
        one that does not chain to the line before) is contained as hz contains it:
        `Spine.verify` records it (``spine.break_contained``; a damaged last line was
        already moved aside by `Spine.open`) and a line that is no envelope is left out
        of the index. An open turn such a line may belong to is not resumed (HZM075)."""
        if index is None:
            found = SpineIndex.scan(spine.path, upgrades=upgrades, skip_damaged=True)
        else:
            found = SpineIndex.catch_up(index, spine, upgrades=upgrades, skip_damaged=True)
        if found.broken:
            report = spine.verify()  # records each break not yet recorded
            unreadable = {b.offset for b in report.breaks if b.reason in _UNREADABLE}
            found.damaged = sorted(unreadable.union(found.damaged))
            found = SpineIndex.catch_up(found, spine, upgrades=upgrades, skip_damaged=True)
        return cls(spine, found, upgrades=upgrades)

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
        """The turn's events, read from its first line on; none for a turn the
        (complete) index does not know; HZM060 when an `at_tail` index does not."""
        offset = self.turn_offset(turn)
        if offset is None:
            if self.index.complete:
                return []
            raise MachineError(
                "HZM060",
                f"the start of turn {turn} in the spine is not known",
                "pass the turn's offset from your index (SpineIndex), or build one with "
                "SpineIndex.scan",
            )
        self._check_whole(turn, offset)
        pending = self.spine.pending
        found: list[Event] = []
        if not pending or offset < pending[0].offset:
            left_out: list[int] = []  # damaged lines the spine records as contained
            events = read_events(
                self.spine.path,
                from_offset=offset,
                upgrades=self.upgrades,
                skip_damaged=bool(self.index.damaged),  # contained when the journal opened
                left_out=left_out,
            )
            found = [e for e in events if e.turn == turn]
            if left_out and not any(e.kind in TERMINAL_KINDS for e in found):
                self._refuse_hole(turn, left_out[0])
        return found + [e for e in pending if e.turn == turn]

    def _check_whole(self, turn: str, offset: int) -> None:
        """HZM075 for a turn that has not ended when a line left out as damaged lies
        after its start: the line may be the turn's own, and its record would miss it
        (an effect's start, say), so a resume could act twice."""
        if not self.index.damaged or turn in self.index.turn_ends:
            return
        hole = next((at for at in self.index.damaged if at > offset), None)
        if hole is not None:
            self._refuse_hole(turn, hole)

    def _refuse_hole(self, turn: str, hole: int) -> None:
        raise MachineError(
            "HZM075",
            f"turn {turn} has not ended and the damaged line at byte {hole} of "
            f"{self.spine.path} lies after its start: its record may miss a line",
            "the break is recorded (spine.break_contained); put the line back from a "
            "copy of the spine to resume the turn; every other turn and key goes on",
        )

    def key_events(self, key: str) -> list[Event]:
        """Every event that speaks for ``key``, from the index (what a line carries for
        the key written out, `machines.stores.journal.expand_carried`)."""
        return _speaking_for(key, self.index.keyed.get(key, ()))

    def turn_ended(self, turn: str) -> bool | None:
        """Whether ``turn`` has ended, from the index (the key rule's question,
        `machines.keys.turn_ended`): no spine read. None when the index is not complete
        (`SpineIndex.at_tail`) and did not see the end: the caller reads the turn."""
        if turn in self.index.turn_ends:
            return True
        return False if self.index.complete else None

    def pending_key_events(self, key: str) -> list[Event]:
        """The events for ``key`` among the spine's held-back lazy lines (`Spine.defer`)."""
        return _speaking_for(key, self.spine.pending)

    def recorded_done(self, key: str) -> str | None:
        """The hash of the last ``effect.done`` for ``key``, whatever the index's keys
        say: among the lines held back to be written with the next one, else in the spine
        file: for the lines a `SpineIndex.scan` read (verified against the spine's tail
        when this journal was built) what it read there, for the bytes after them a byte
        search for the key (only matching lines parsed). Without a scanned index the whole
        file is searched."""
        for event in reversed(list(expand_carried(self.spine.pending))):
            if event.kind == "effect.done" and event.key == key:
                return str(event.data.get("hash"))
        start = self.index.scanned_to
        after = done_in_file(self.spine.path, key, start=start)
        return after if after is not None else self.index.scanned_done.get(key)


def _speaking_for(key: str, lines: Sequence[Event]) -> list[Event]:
    """The events of ``lines`` that speak for ``key``, carried ones written out."""
    return [e for e in expand_carried(lines) if key in keys_of(e)]


def done_in_file(path: Path, key: str, *, start: int = 0) -> str | None:
    """The last ``effect.done`` hash recorded for ``key`` in the spine at ``path``, in
    the lines that start at ``start`` or later (a line's start offset): a line of its
    own (the key is its envelope's) or carried by the next line (the key is in its
    ``done``)."""
    needle = canonical(key).encode("utf-8")
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size <= start:
            return None
        if size - start <= _READ_AT_ONCE:  # a turn's own lines: one read beats a mapping
            return _last_done(os.pread(handle.fileno(), size - start, start), needle, key, start)
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
            return _last_done(view, needle, key, 0, start)


_READ_AT_ONCE = 1 << 20
"""Up to this many bytes after ``start``, `done_in_file` reads them instead of mapping the file."""


def _last_done(
    view: bytes | mmap.mmap, needle: bytes, key: str, base: int, start: int = 0
) -> str | None:
    """The last ``effect.done`` hash for ``key`` among the lines of ``view`` (the file's
    bytes from offset ``base``) that start at ``start`` (within ``view``) or later."""
    found: str | None = None
    at = view.find(needle, start)
    while at >= 0:
        start = view.rfind(b"\n", 0, at) + 1
        end = view.find(b"\n", at)
        if end < 0:
            break
        line = parse_event(view[start:end], base + start)
        for event in expand_carried([line] if line is not None else []):
            if event.kind == "effect.done" and event.key == key:
                found = str(event.data.get("hash"))
        at = view.find(needle, end)
    return found


_UNREADABLE = frozenset({"invalid-json", "bad-envelope"})
"""Breaks whose line a reader cannot take (`read_events` raises HZL030 for it)."""


_plain_tail_re = lazy_pattern(
    rb',"key":null,"kind":"([a-z][a-z0-9_.-]*)","prev":(?:null|"([0-9a-f]{64})"),'
    rb'"seq":([1-9][0-9]*),"ts":"[0-9TZ:.-]+","turn":(?:null|"([A-Za-z0-9_.:@+-]*)"),"v":1}\Z'
)
"""The end of a canonical envelope whose key is null (its keys are sorted: ``data``,
``key``, ``kind``, ``prev``, ``seq``, ``ts``, ``turn``, ``v``)."""


_TAIL_BYTES = 512
_DONE = canonical(DONE).encode("ascii") + b":"
"""A line that may carry an effect's end (`machines.stores.journal.DONE`) speaks for its key."""
_TERMINAL = frozenset(kind.encode("ascii") for kind in TERMINAL_KINDS)


def _plain(body: bytes, upgrades: Upgrades | None) -> tuple[str | None, str | None, int] | None:
    """``(turn, prev, seq)`` of a line the index keeps nothing of but its turn's first
    offset (no key, no ``data.keys``, not a turn's end, a kind no upgrade renames),
    read from its envelope's end; None for any other line (it is parsed)."""
    if not body.startswith(b'{"data":{') or b'"keys":' in body or _DONE in body:
        return None
    match = _plain_tail_re().search(body, max(0, len(body) - _TAIL_BYTES))
    if match is None:
        return None
    kind, prev, seq, turn = match.groups()
    if kind in _TERMINAL or (upgrades is not None and kind.decode("ascii") in upgrades):
        return None
    return (
        None if turn is None else turn.decode("ascii"),
        None if prev is None else prev.decode("ascii"),
        int(seq),
    )


def _after_line(path: Path, offset: int, digest: str | None) -> int | None:
    """The offset after the line at ``offset`` when that line's hash is ``digest`` (the
    file holds the line as an index took it in), else None."""
    try:
        for at, raw in iter_lines(path, offset):
            if raw.endswith(b"\n") and sha256_hex(raw[:-1]) == digest:
                return at + len(raw)
            return None
    except LedgerError:  # not a line start there: the file is not the one it indexed
        return None
    return None
