"""Where a Heinzelmännchen's turn writes: its journal, its body and the engine's recorder.

`IndexedJournal` is the machine's `SpineJournal` over the session's spine whose turn
offsets and keyed events come from the heinzel index (the ``turns`` and ``keys``
tables), so a resume reads only the turn's own lines and the key rule needs no spine
scan; its `recorded_done` reads the ``keys`` table's done lines back from the spine and
searches only the bytes after the index's watermark. `SessionBody` is the machine's
`Body` over `ledger.bodies.Bodies` (step results are records ``{"kind": "value",
"hash", "value"}`` beside the engine's own records). `EngineRecorder` is the engine's
`Recorder` mapped onto the machine's vocabulary: a ``step.model`` checkpoint becomes
``model.request`` (so the machine counts the spend), ``step.tool`` and ``step.handoff``
keep their names (a handoff's line carries the runner's record, see
`heinzel.turns.handoff`); nothing is written twice for one call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ledger.bodies import Bodies
from ledger.event import Event, make_event, sha256_hex
from ledger.guard import checked_data
from ledger.index import WATERMARKS
from ledger.reading import iter_lines
from ledger.spine import Spine, read_events
from machines import DiskBody, Journal, SpineIndex, SpineJournal
from machines.stores.disk_body import BODY_SYNC_KINDS, LAZY_KINDS, UNSYNCED_KINDS, write_lazily
from machines.stores.journal import (
    CARRIED,
    CARRIED_OWN,
    DONE,
    carried_effects,
    expand_carried,
    keys_of,
    without_carried,
)
from machines.stores.spine_journal import done_in_file

if TYPE_CHECKING:
    from sqlite_utils import Database

__all__ = [
    "BODY_SYNC_KINDS",
    "LAZY_KINDS",
    "UNSYNCED_KINDS",
    "EngineRecorder",
    "IndexedJournal",
    "SessionBody",
    "write_lazily",
]
"""`write_lazily` and its kinds live in `machines.stores.disk_body` (every host's one fsync per
step); hz's turn host takes them from here."""

_NO_CARRIER = frozenset({"effect.done", *CARRIED_OWN})
"""Kinds whose lines carry no effect's end (`machines.stores.journal.carried_effects`)."""

STEP = frozenset({"step", "input"})
"""The fields of a step start that can ride on the next line (all the machine writes)."""


class IndexedJournal(SpineJournal):
    """A `SpineJournal` whose index is the heinzel index (no spine scan), and whose
    ``step.started`` checkpoints and effects' ends ride on the turn's next line.

    A step's start is held (a lazy line anyway: written only with the next line, see
    `LAZY_KINDS`) and the next line of its turn carries it, ``{"steps": {step: input}}``
    (`machines.stores.journal.CARRIED`), instead of a line of its own: the drafted turn's four
    step lines cost about 60 bytes instead of about 970 (docs/spine.md, "Steps carried by
    the next line"). Readers write them out again (`machines.stores.journal.expand_carried`; the
    fold does), so a spine of either form reads alike.

    An effect's ``effect.done`` (lazy too) and its own event when that is lazy
    (``draft.placed``, `machines.stores.journal.CARRIED_OWN`) are held the same way and the
    turn's next line carries them, ``{"done": {key: {"hash", "draft.placed": {...}}}}``
    (`machines.stores.journal.DONE`): the effect's key is written once more, not twice, and two
    envelopes are saved. Any other line (another turn's, or an own event that is a line
    of its own) first writes a held end out as its own lines, as before.
    """

    def __init__(self, spine: Spine, db: Database, heinzel_id: str) -> None:
        super().__init__(spine, SpineIndex.at_tail(spine))
        self.db = db
        self.heinzel_id = heinzel_id
        self.held: dict[str, dict[str, Any]] = {}
        """Per turn, the steps started since its last line: ``{step: input}``."""
        self.ended: dict[str, tuple[str, dict[str, Any], tuple[str, ...]]] = {}
        """Per turn, the effect whose end no line carries yet: its key, what the next line
        carries of it (``{"hash", <own kind>: {...}}``) and the own event's short texts."""

    def append(
        self,
        kind: str,
        data: Mapping[str, Any] | None = None,
        *,
        turn: str | None = None,
        key: str | None = None,
        short_text: Sequence[str] = (),
    ) -> Event:
        """Append a line; a plain step start and an effect's end (``effect.done``, then
        ``draft.placed``) are held for the turn's next line, which carries them (the event
        returned is the line as asked for, without ``steps`` or ``done``)."""
        data = dict(data or {})
        if turn is not None and self._hold_end(kind, data, turn, key, short_text):
            return self._held_event(turn, data, kind, key)
        self._write_ends(turn, key, kind)
        ended_now = turn is not None and kind == "effect.done"  # another end written out
        if ended_now and self._hold_end(kind, data, str(turn), key, short_text):
            return self._held_event(str(turn), data, kind, key)
        if (
            turn is not None
            and kind == "step.started"
            and key is None
            and set(data) == STEP
            and self._last() is not None  # a turn's steps follow its start: always
        ):
            self.held.setdefault(turn, {})[str(data["step"])] = data["input"]
            return self._held_event(turn, data)
        carried = self.held.pop(turn, None) if turn is not None else None
        ended = self.ended.pop(turn, None) if turn is not None else None
        if turn is None or not (carried or ended):
            return super().append(kind, data, turn=turn, key=key, short_text=short_text)
        extra: dict[str, Any] = {}
        if carried:
            extra[CARRIED] = carried
        if ended:
            extra[DONE] = {ended[0]: ended[1]}
            short_text = (*short_text, *ended[2])
        try:
            event = super().append(
                kind, {**data, **extra}, turn=turn, key=key, short_text=short_text
            )
        except BaseException:
            if carried:  # nothing was written: the next line carries them
                self.held[turn] = carried
            if ended:
                self.ended[turn] = ended
            raise
        return without_carried(event)

    def _hold_end(
        self,
        kind: str,
        data: Mapping[str, Any],
        turn: str,
        key: str | None,
        short_text: Sequence[str],
    ) -> bool:
        """Hold an ``effect.done`` (no step waits to be carried before it, no other end
        is held), or the lazy own event of the effect held; True when held. The own
        event passes the content guard now, where its line would have."""
        if kind == "effect.done" and key is not None and not self.ended and not self.held:
            if self._last() is None:
                return False
            checked = checked_data(data)
            self.ended[turn] = (key, checked, ())
            return True
        held = self.ended.get(turn)
        if kind not in CARRIED_OWN or held is None or held[0] != key or kind in held[1]:
            return False
        own = checked_data(data, short_text)
        if own.get("hash") == held[1].get("hash"):
            own.pop("hash")
        self.ended[turn] = (key, {**held[1], kind: own}, (*held[2], *short_text))
        return True

    def _write_ends(self, turn: str | None, key: str | None, kind: str | None) -> None:
        """Write out, as lines of their own, the held effects' ends the next line (of
        ``turn``, keyed ``key``, of ``kind``) may not carry: another turn's, one of the same
        key, or any before an effect's end or own event (such a line carries none)."""
        for other, (held_key, end, texts) in list(self.ended.items()):
            if other == turn and held_key != key and kind not in _NO_CARRIER:
                continue
            del self.ended[other]
            for one in carried_effects(self._carrier(other, held_key, end)):
                SpineJournal.append(
                    self, one.kind, one.data, turn=other, key=held_key, short_text=texts
                )

    def write_held(self) -> None:
        """Write out a held effect's end as lines of its own (before the spine closes
        with no line of its turn after it: a turn left by an exception); nothing held,
        or a spine that can no longer write, writes nothing."""
        if self.ended and not self.spine.closed:
            self._write_ends(None, None, None)
            self.spine.sync()

    def _carrier(self, turn: str, key: str, end: Mapping[str, Any]) -> Event:
        """An event that carries only ``end`` (to write it out again)."""
        return make_event(
            seq=0,
            ts="",
            prev=None,
            kind="turn.carried",
            data={DONE: {key: dict(end)}},
            turn=turn,
            key=None,
        )

    def _last(self) -> Event | None:
        """The spine's last line, written or held back to be written."""
        return self.spine.pending[-1] if self.spine.pending else self.spine.last

    def _held_event(
        self,
        turn: str,
        data: Mapping[str, Any],
        kind: str = "step.started",
        key: str | None = None,
    ) -> Event:
        """A held line as an event (the machine folds it now): numbered and timed as
        the line that will carry it is, at the latest."""
        last = self._last()
        assert last is not None  # held only after a line
        return make_event(
            seq=last.seq + 1, ts=last.ts, prev=None, kind=kind, data=dict(data), turn=turn, key=key
        )

    def _held_ends(self, turn: str | None = None) -> list[Event]:
        """The effects' ends no line carries yet (of ``turn``, or of every turn)."""
        events: list[Event] = []
        for other, (key, end, _) in self.ended.items():
            if turn is None or other == turn:
                events.extend(
                    self._held_event(other, e.data, e.kind, key)
                    for e in carried_effects(self._carrier(other, key, end))
                )
        return events

    def turn_offset(self, turn: str) -> int | None:
        """The turn's first offset, from what this process appended or the index."""
        known = self.index.turn_offsets.get(turn)
        if known is not None:
            return known
        rows = list(
            self.db.query(
                "SELECT start_offset FROM turns WHERE id = ? AND heinzel = ?",
                [turn, self.heinzel_id],
            )
        )
        if rows and rows[0]["start_offset"] is not None:
            offset = int(rows[0]["start_offset"])
            self.index.turn_offsets[turn] = offset
            return offset
        return None

    def turn_events(self, turn: str) -> list[Event]:
        """The turn's events, read from its first line (offset from the index); none
        for a turn the index does not know (it is caught up with the spine)."""
        if self.turn_offset(turn) is None:
            return []
        held = self.held.get(turn, {})  # steps and effects' ends no line carries yet
        return (
            super().turn_events(turn)
            + self._held_ends(turn)
            + [
                self._held_event(turn, {"step": step, "input": digest})
                for step, digest in held.items()
            ]
        )

    def turn_ended(self, turn: str) -> bool | None:
        """Whether ``turn`` has ended, from what this process appended or the ``turns``
        table (its ``ended_at``), without reading the spine; None when the index holds no
        end (the key rule then reads the turn's lines, `machines.keys.turn_ended`)."""
        if super().turn_ended(turn):
            return True
        row = self.db.execute(
            "SELECT ended_at FROM turns WHERE id = ? AND heinzel = ?", [turn, self.heinzel_id]
        ).fetchone()
        return True if row is not None and row[0] is not None else None

    def key_events(self, key: str) -> list[Event]:
        """Every event that speaks for ``key``: the lines the ``keys`` table points at."""
        rows = self.db.query(
            "SELECT line_offset FROM keys WHERE heinzel = ? AND key = ? ORDER BY seq",
            [self.heinzel_id, key],
        )
        events: list[Event] = []
        for row in rows:
            for line in read_events(self.spine.path, from_offset=int(row["line_offset"])):
                events.extend(e for e in expand_carried([line]) if key in keys_of(e))
                break
        held = [e for e in self._held_ends() if e.key == key]
        return events + self.pending_key_events(key) + held

    def recorded_done(self, key: str) -> str | None:
        """The hash of the last ``effect.done`` for ``key`` the spine holds, found without
        reading the spine: among the held-back lines, else by a byte search of the bytes
        after the index's watermark line (checked in the file by its hash), else from the
        ``effect.done`` rows of the ``keys`` table, each read back from the spine at its
        offset. A watermark the file does not hold searches the whole file."""
        for held in reversed([*expand_carried(self.spine.pending), *self._held_ends()]):
            if held.kind == "effect.done" and held.key == key:
                return str(held.data.get("hash"))
        indexed = self.indexed_to()
        after = done_in_file(self.spine.path, key, start=indexed)
        if after is not None or not indexed:
            return after
        rows = self.db.execute(
            "SELECT line_offset FROM keys WHERE heinzel = ? AND key = ? AND kind = 'effect.done' "
            "AND line_offset < ? ORDER BY seq DESC",
            [self.heinzel_id, key, indexed],
        ).fetchall()
        for (offset,) in rows:
            line = next(read_events(self.spine.path, from_offset=int(offset)), None)
            for event in reversed(list(expand_carried([line] if line is not None else []))):
                if event.kind == "effect.done" and event.key == key:
                    return str(event.data.get("hash"))
        return None

    def indexed_to(self) -> int:
        """The offset after the index's watermark line for this spine: every line before
        it is folded into the index; 0 when the file does not hold that line as it was."""
        mark = self.db.execute(
            f"SELECT hash, at FROM {WATERMARKS} WHERE source = ?",  # noqa: S608
            [self.heinzel_id],
        ).fetchone()
        if mark is None:
            return 0
        for offset, raw in iter_lines(self.spine.path, int(mark[1])):
            if raw.endswith(b"\n") and sha256_hex(raw[:-1]) == mark[0]:
                return offset + len(raw)
            break
        return 0


class SessionBody(DiskBody):
    """The machine's `Body` over the session's turn bodies (`machines.DiskBody`)."""


class EngineRecorder:
    """The engine's `Recorder` for one turn, writing the machine's vocabulary."""

    def __init__(
        self,
        journal: Journal,
        bodies: Bodies,
        turn: str,
        *,
        cap_usd: Decimal,
        sync: Callable[[], None] | None = None,
    ) -> None:
        self.journal = journal
        self.sync = sync
        """Makes the lazy lines and deferred body records durable (`write_lazily`)."""
        self.bodies = bodies
        self.turn = turn
        self.cap_usd = cap_usd
        self.usd = Decimal(0)
        self.handoff: dict[str, Any] | None = None
        self.runner_name: str | None = None
        self.question_key: Callable[[str], str] | None = None
        """A chat turn's question key of a proposal id (`heinzel.turns.chat.question_key`)."""

    def checkpoint(self, kind: str, data: Mapping[str, Any]) -> None:
        """``step.model`` -> ``model.request{n, hash, usd, tokens, tools?}``; the rest as named."""
        if kind == "step.model":
            raw = data.get("usd")
            usd = self.cap_usd if raw == "cap" else Decimal(str(raw or 0))
            self.usd += usd
            tokens = int(data.get("in") or 0) + int(data.get("out") or 0)
            mapped: dict[str, Any] = {"n": data.get("n"), "hash": data.get("body")}
            if usd:  # a free request (the offline model) spends nothing: no field
                mapped["usd"] = float(usd)
            mapped["tokens"] = tokens
            if data.get("cached"):
                mapped["cached"] = int(data["cached"])  # of ``tokens``, read from the cache
            if data.get("tools"):
                mapped["tools"] = list(data["tools"])  # the calls whose results it sent
            self.journal.append("model.request", mapped, turn=self.turn)
            return
        if kind == "question.asked" and self.question_key is not None:
            key = self.question_key(str(data.get("proposal")))
            if not any(e.kind == kind for e in self.journal.key_events(key)):
                self.journal.append(kind, dict(data), turn=self.turn, key=key)
            return
        if kind == "step.handoff":
            record = self.handoff or {"runner": self.runner_name, "status": "interrupted"}
            self.handoff = None
            data = {**record, **data}
        self.journal.append(kind, dict(data), turn=self.turn)

    def body(self, record: Mapping[str, Any]) -> str:
        """Append a body record; its hash."""
        return self.bodies.append(self.turn, record)

    def durable(self) -> None:
        """Every line and body record so far on disk (before a call that is not replay-safe)."""
        if self.sync is not None:
            self.sync()
