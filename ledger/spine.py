"""The spine's one writer: append-only, hash-chained, durable on return.

`Spine.open` takes an exclusive flock on ``<directory>/lock`` (a second writer
polls for at most ``lock_timeout`` seconds, then gets HZL010), finds the end of
the last complete line by reading backwards from the end of ``session.jsonl``,
and contains what a crash left behind:

- a torn tail (bytes after the last newline, from a crash mid-append), and
  any complete last lines that are not JSON at all (garbage something else
  appended), is moved to a side file ``session.jsonl.torn-<n>`` beside the
  spine, the spine is cut back to its last JSON line, and ``spine.torn_tail``
  records the moved bytes' size, sha256 and side file (never their content);
- when the last lines do not chain (a damaged line at the end), the whole file
  is verified, appends continue chained to the last line as written, and each
  break not yet recorded gets a ``spine.break_contained`` event.

An append is one ``os.write`` of the canonical line and one ``os.fsync``; before
the write each ``before_write`` callback gets the events about to be written (a
host fsyncs the turn bodies there when the line ends a turn), then each
``on_durable`` callback gets the event (the index update; crash points of the
test hooks live in the callers, not here). A host may hold lines of some kinds
back (`defer`: written with the next line) or write them without their own fsync
(`unsynced`: the next fsync covers them); docs/spine.md, "One fsync per step".
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from ledger.errors import LedgerError
from ledger.event import Clock, Event, envelope_text, format_ts, sha256_hex
from ledger.files import (
    TailBlock,
    as_path,
    ensure_private_dir,
    open_append,
    open_read,
    write_atomic,
)
from ledger.guard import MAX_LINE, check_line_size, checked_append
from ledger.lazy import lazy_pattern
from ledger.lock import Sleep, take_lock
from ledger.reading import (
    SPINE_NAME,
    LineProblem,
    Upgrades,
    check_line,
    event_from_object,
    newer_envelope,
    newer_envelope_error,
    read_events,
)
from ledger.verify import BREAK_CONTAINED, Break, BreakReason, VerifyReport, verify

__all__ = [
    "BREAK_CONTAINED",
    "LOCK_NAME",
    "MAX_LINE",
    "SPINE_NAME",
    "TORN_TAIL",
    "Break",
    "BreakReason",
    "Spine",
    "Upgrades",
    "VerifyReport",
    "read_events",
    "verify",
]

LOCK_NAME = "lock"
TORN_TAIL = "spine.torn_tail"


_side_file_re = lazy_pattern(r"session\.jsonl\.torn-(\d+)")


_Checked = tuple[dict[str, Any] | None, LineProblem | None, str]
"""What `check_line` returns."""


class Spine:
    """The open writer of one spine (``<directory>/session.jsonl``), holding its lock.

    Use as a context manager, or call `close`. Only `open` constructs one.
    """

    def __init__(
        self,
        directory: Path,
        *,
        clock: Clock,
        fd: int,
        lock_fd: int,
        on_durable: Sequence[Callable[[Event], None]],
        upgrades: Upgrades | None,
    ) -> None:
        self.directory = directory
        self.path = directory / SPINE_NAME
        self._clock = clock
        self._fd: int | None = fd
        self._lock_fd: int | None = lock_fd
        self._on_durable = tuple(on_durable)
        self._before_write: list[Callable[[Sequence[Event]], None]] = []
        self._lazy: frozenset[str] = frozenset()
        self._unsynced: frozenset[str] = frozenset()
        self._pending: list[tuple[bytes, Event]] = []
        """Lazy lines held back, with their events (written by the next flush)."""
        self._synced = 0
        """Where the bytes written end (``_size`` counts the pending lines too)."""
        self._fsynced = 0
        """Where the bytes fsynced end (``_synced`` counts `unsynced` lines too)."""
        self._durable: Event | None = None
        """The last event on disk (``_last`` may be a pending one)."""
        self._upgrades = upgrades
        self._seq = 0
        self._prev: str | None = None
        self._size = 0
        self._last: Event | None = None

    @classmethod
    def open(
        cls,
        directory: Path,
        *,
        clock: Clock,
        lock_timeout: float = 10.0,
        on_durable: Sequence[Callable[[Event], None]] = (),
        upgrades: Upgrades | None = None,
        sleep: Sleep = time.sleep,
    ) -> Spine:
        """Open the spine in ``directory`` for appending (created if missing).

        ``directory`` may also name the spine file itself (``.../session.jsonl``),
        as every reader accepts either.

        Takes the lock (HZL010 after ``lock_timeout`` seconds), then contains a
        torn tail or a damaged end as the module says.
        """
        directory = as_path(directory)
        if directory.name == SPINE_NAME and not directory.is_dir():
            directory = directory.parent
        directory = ensure_private_dir(directory)
        lock_fd = take_lock(directory / LOCK_NAME, lock_timeout, sleep)
        fd: int | None = None
        try:
            fd = open_append(directory / SPINE_NAME)
            spine = cls(
                directory,
                clock=clock,
                fd=fd,
                lock_fd=lock_fd,
                on_durable=on_durable,
                upgrades=upgrades,
            )
            spine._recover()
        except BaseException:
            if fd is not None:
                os.close(fd)
            os.close(lock_fd)
            raise
        return spine

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the file and release the lock (idempotent); lazy lines are fsynced first."""
        if self._fd is not None and (self._pending or self._fsynced < self._synced):
            with contextlib.suppress(LedgerError):
                self.sync()  # a failed write closed the writer; nothing of it was recorded
        self._shut()

    def _shut(self) -> None:
        """Close the file and release the lock, syncing nothing (after a failed write)."""
        for fd in (self._fd, self._lock_fd):
            if fd is not None:
                os.close(fd)
        self._fd = self._lock_fd = None

    @property
    def closed(self) -> bool:
        """Whether this writer was closed (by `close`, or by a failed append)."""
        return self._fd is None

    @property
    def pending(self) -> tuple[Event, ...]:
        """The lazy lines held back, not yet written (`defer`): a journal over this
        spine answers from them too."""
        return tuple(event for _, event in self._pending)

    @property
    def last(self) -> Event | None:
        """The last event of the spine (upgraded), or None when it is empty or
        its last line is damaged."""
        return self._last

    def append(
        self,
        kind: str,
        data: Mapping[str, Any] | None = None,
        *,
        turn: str | None = None,
        key: str | None = None,
        short_text: Collection[str] = (),
    ) -> Event:
        """Append one event; durable when this returns; then ``on_durable`` runs.

        A lazy kind (`defer`) is held back instead and written, fsynced and
        passed to ``on_durable`` with the next line of another kind or `sync`.

        ``data`` passes the content guard (`ledger.guard`); ``short_text`` names
        the fields allowed to carry short texts a user reads. Nothing is written
        when a check fails. An exception from a callback propagates to the
        caller; the line is durable by then and the writer stays usable.
        """
        fd = self._writable()
        payload = checked_append(kind, data, turn=turn, key=key, short_text=short_text)
        seq, ts, prev, offset = self._seq + 1, format_ts(self._clock()), self._prev, self._size
        line = (
            envelope_text(seq, ts, prev, turn=turn, kind=kind, key=key, data=payload) + "\n"
        ).encode("utf-8")
        check_line_size(kind, len(line))
        event = Event(
            seq,
            ts,
            prev,
            turn,
            kind,
            key,
            payload,
            hash=sha256_hex(line[:-1]),
            offset=offset,
            size=len(line),
        )
        self._seq, self._prev, self._size = event.seq, event.hash, self._size + len(line)
        self._last = event
        self._pending.append((line, event))
        if kind not in self._lazy:
            self._flush(fd, fsync=kind not in self._unsynced)
        return event

    def defer(self, kinds: Collection[str]) -> None:
        """Hold lines of ``kinds`` back until the next line of another kind (lazy lines).

        A lazy line gets its seq, hash and offset when `append` returns, but it
        is written with the next line of a kind not in ``kinds`` (or by `sync`,
        or `close`): one write and one fsync for all of them, then
        ``on_durable`` runs for each in order. Until then no reader sees it. A
        host makes lazy only the lines that no act in the world waits for, and
        calls `sync` before such an act (docs/spine.md, "One fsync per step").
        """
        self._lazy = frozenset(kinds)

    def unsynced(self, kinds: Collection[str]) -> None:
        """Write lines of ``kinds`` at once but leave their fsync to the next line.

        Such a line (with any lazy line held before it) is written when `append`
        returns, so every reader and every later process sees it and a killed
        process loses nothing; only a power cut before the next fsync (a line of
        another kind, `sync` or `close`) can take it. ``on_durable`` runs when it
        is written. A host makes unsynced only lines no act in the world waits
        for (hz: ``turn.started``; docs/spine.md, "One fsync per step").
        """
        self._unsynced = frozenset(kinds)

    def sync(self) -> None:
        """Write and fsync the lazy lines held back and what `unsynced` lines wrote
        (nothing when there is neither)."""
        fd = self._writable()
        if self._pending:
            self._flush(fd)
        elif self._fsynced < self._synced:
            self._write(fd, b"")

    def simulate_power_cut(self) -> None:
        """Cut the file back to its last fsync, as a power cut may (a crash-point
        test hook: nothing but ``HZ_CRASH_AT=body-lost:<n>`` calls it)."""
        os.truncate(self.path, self._fsynced)

    def _flush(self, fd: int, *, fsync: bool = True) -> None:
        """The ``before_write`` callbacks, one write (and one fsync unless ``fsync``
        is False) of every pending line, then ``on_durable`` for each."""
        pending, self._pending = self._pending, []
        try:
            events = (pending[0][1],) if len(pending) == 1 else tuple(e for _, e in pending)
            for flush in self._before_write:
                flush(events)
        except BaseException:
            self._forget(pending)
            raise
        lines = pending[0][0] if len(pending) == 1 else b"".join(line for line, _ in pending)
        self._write(fd, lines, fsync=fsync)
        self._synced, self._durable = self._size, pending[-1][1]
        for _, event in pending:
            for callback in self._on_durable:
                callback(event)

    def _forget(self, pending: list[tuple[bytes, Event]]) -> None:
        """Lines that were never written: the writer goes back to the last one on disk."""
        if not pending:
            return
        first = pending[0][1]
        self._seq, self._prev, self._size = first.seq - 1, first.prev, self._synced
        self._last = self._durable

    def before_write(self, callback: Callable[[Sequence[Event]], None]) -> None:
        """Run ``callback`` with the events about to be written, before each later
        write (after their checks pass).

        A host that defers the fsync of turn bodies (`Bodies(defer_fsync=True)`)
        syncs them here before the lines that need them on disk (hz: a turn's
        end, `machines.stores.disk_body.write_lazily`). An exception from it
        propagates and nothing is written.
        """
        self._before_write.append(callback)

    def events(
        self, *, from_seq: int = 1, from_offset: int = 0, kinds: Collection[str] | None = None
    ) -> Iterator[Event]:
        """`read_events` of this spine with this writer's upgrades."""
        return read_events(
            self.path,
            from_seq=from_seq,
            from_offset=from_offset,
            kinds=kinds,
            upgrades=self._upgrades,
        )

    def verify(self) -> VerifyReport:
        """Verify the whole chain and record each break not yet recorded
        (``spine.break_contained``); the report marks them contained."""
        self._writable()
        report = verify(self.path)
        fresh = [item for item in report.uncontained() if item.reason != "torn-tail"]
        for item in fresh:
            self._record_break(item)
        if not fresh:
            return report
        return replace(
            report,
            breaks=[
                replace(item, contained=item.contained or item in fresh) for item in report.breaks
            ],
        )

    def _writable(self) -> int:
        if self._fd is None:
            raise LedgerError(
                "HZL011", f"the spine {self.path} is closed", "open it again with Spine.open"
            )
        return self._fd

    def _write(self, fd: int, line: bytes, *, fsync: bool = True) -> None:
        """One write and (unless ``fsync`` is False) one fsync, which covers what
        earlier unsynced writes left; on failure cut the partial line and close."""
        try:
            written = os.write(fd, line) if line else 0
            if written != len(line):
                raise OSError(0, f"wrote {written} of {len(line)} bytes")
            if fsync:
                os.fsync(fd)
                self._fsynced = self._synced + len(line)
        except OSError as error:
            try:
                os.ftruncate(fd, self._synced)
                os.fsync(fd)
            except OSError:
                pass  # the next open contains whatever is left as a torn tail
            self._shut()
            raise LedgerError(
                "HZL012",
                f"appending to {self.path} failed: {error.strerror or error}; nothing was recorded",
                "check the disk (space, a read-only mount), then open the spine again",
            ) from error

    def _record_break(self, item: Break) -> None:
        self.append(
            BREAK_CONTAINED,
            {"seq": item.seq, "offset": item.offset, "reason": item.reason, "detail": item.detail},
        )

    def _recover(self) -> None:
        """Find the tail, move a torn one aside, and contain a damaged end."""
        fd = self._writable()
        reader = open_read(self.path)
        try:
            size = os.fstat(reader).st_size
            tail = TailBlock(reader, size)
            end, checked = self._json_end(tail, tail.last_newline_end(size))
            if checked is not None and (version := newer_envelope(checked[0])) is not None:
                start = tail.last_newline_end(end - 1)
                raise newer_envelope_error(self.path, start, version)  # nothing written
            torn = tail.read(end, size) if end < size else b""
            if torn:
                side = self._side_file()
                write_atomic(self.directory / side, torn)
                os.ftruncate(fd, end)
                os.fsync(fd)
            fresh = self._find_tail(tail, end, checked)
        finally:
            os.close(reader)
        if torn:
            self.append(
                TORN_TAIL,
                {"size": len(torn), "sha256": sha256_hex(torn), "side_file": side, "offset": end},
            )
        for item in fresh:
            self._record_break(item)

    @staticmethod
    def _json_end(tail: TailBlock, end: int) -> tuple[int, _Checked | None]:
        """``end`` moved back over complete last lines that are not JSON at all (garbage
        appended by something else than a writer): they are contained like a torn tail.
        With it, the `check_line` of the line that ends there (None when none does)."""
        while end > 0:
            start = tail.last_newline_end(end - 1)
            checked = check_line(tail.read(start, end - 1))
            if checked[1] != "invalid-json":
                return end, checked
            end = start
        return end, None

    def _side_file(self) -> str:
        taken = [
            int(match.group(1))
            for name in os.listdir(self.directory)
            if (match := _side_file_re().fullmatch(name))
        ]
        return f"{SPINE_NAME}.torn-{max(taken, default=0) + 1}"

    def _find_tail(self, tail: TailBlock, end: int, checked: _Checked | None) -> list[Break]:
        """Set seq, prev and last from the last complete lines (``checked``: the last
        line's `check_line`); return breaks to record."""
        self._size = self._synced = self._fsynced = end
        if end == 0:
            return []
        start = tail.last_newline_end(end - 1)
        body = tail.read(start, end - 1)
        obj, reason, _ = checked or check_line(body)
        before: bytes | None = None
        if start > 0:
            before_start = tail.last_newline_end(start - 1)
            before = tail.read(before_start, start - 1)
        if reason is None and obj is not None and self._links(obj, before):
            self._seq, self._prev = obj["seq"], sha256_hex(body)
            self._last = self._durable = self._read_event(obj, body, start)
            return []
        report = verify(self.path)
        self._seq, self._prev = report.last_seq or 0, report.last_hash
        self._last = self._read_event(obj, body, start) if reason is None and obj else None
        self._durable = self._last
        return report.uncontained()

    @staticmethod
    def _links(obj: Mapping[str, Any], before: bytes | None) -> bool:
        """Whether the last line follows the line before it (or is a valid first line)."""
        if before is None:
            return bool(obj["seq"] == 1 and obj["prev"] is None)
        if obj["prev"] != sha256_hex(before):
            return False
        previous, reason, _ = check_line(before)
        return reason is not None or previous is None or obj["seq"] == previous["seq"] + 1

    def _read_event(self, obj: Mapping[str, Any], body: bytes, offset: int) -> Event:
        event = event_from_object(obj, sha256_hex(body), offset, len(body) + 1)
        return self._upgrades.upgrade(event) if self._upgrades else event
