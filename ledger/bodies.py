"""Turn bodies: ``<directory>/turns/<turn>.jsonl``, the content the spine never holds.

A body is an append-only file of JSON records (messages, tool calls and
results, inputs as fetched, draft text), one canonical line each, fsynced on
append. `Bodies.append` returns the line's content hash ``sha256:<hex>``, which
the spine records, so a body that has expired is a gap the user can see, never a
break in the chain. Bodies expire only through an explicit `Bodies.prune`: it
deletes regular files named like bodies hz writes, never follows a link, is
idempotent, and never runs as a side effect of a read. A `Bodies` keeps one
open descriptor per turn it appends to, so a record costs a write and an fsync;
`Bodies.close` closes them at the turn's end.

With ``defer_fsync=True`` a record costs only the write (it survives any
process death at once, a power cut only once synced): `Bodies.sync` fsyncs every
body written since the last sync, once, and the ``turns/`` directory when a body
was created since. hz syncs a turn's body when the turn parks or ends, and
before a call that is not replay-safe; a line may name a record a power cut
took, and the turn machine regains it by rerunning the step that produced it
(docs/spine.md, "One fsync per step").
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import stat
import weakref
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ledger import fsyncs
from ledger.errors import LedgerError
from ledger.event import canonical, sha256_hex
from ledger.files import (
    as_path,
    ensure_private_dir,
    last_newline_end,
    open_append,
    open_read,
)
from ledger.lazy import lazy_pattern

__all__ = ["BODIES_DIR", "Bodies"]

BODIES_DIR = "turns"
_TURN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


_body_file_re = lazy_pattern(r"([A-Za-z0-9][A-Za-z0-9_.-]{0,127})\.jsonl")


def _close_all(handles: dict[str, tuple[int, int]]) -> None:
    """Close every descriptor in ``handles`` (also when a `Bodies` is collected)."""
    while handles:
        _, (fd, _) = handles.popitem()
        with contextlib.suppress(OSError):
            os.close(fd)


def _check_turn(turn: str) -> str:
    if not isinstance(turn, str) or not _TURN.fullmatch(turn) or ".." in turn:
        raise LedgerError(
            "HZL040",
            f"{turn!r} is not a turn id hz names a body after",
            "turn ids are letters, digits, '-', '_' and '.', at most 128 characters",
        )
    return turn


class Bodies:
    """The turn bodies of one session directory (``<directory>/turns/``).

    Appending is the spine writer's job (it holds the session's lock); reading
    needs no lock.
    """

    def __init__(
        self,
        directory: Path,
        *,
        defer_fsync: bool = False,
        on_write: Callable[[int, int], None] | None = None,
        on_sync: Callable[[tuple[Path, ...]], None] | None = None,
    ) -> None:
        self.directory = as_path(directory) / BODIES_DIR
        self.defer_fsync = defer_fsync
        self.on_write = on_write
        """Called after each record's write with the descriptor and where its synced
        bytes end (test hooks: a crash between a body write and the spine line)."""
        self.on_sync = on_sync
        """Called by `sync` once the bodies are fsynced and while the directory's fsync
        may still run, with the bodies created since its last one (test hooks)."""
        self._synced_end: dict[str, int] = {}
        self._open: dict[str, tuple[int, int]] = {}
        """Per turn: the body's open append descriptor and where hz's last line ends."""
        self._paths: dict[str, Path] = {}
        """Per turn: its body's path, checked once (dropped with its handle)."""
        self._dirty: set[str] = set()
        """Turns with records written since their last fsync (``defer_fsync`` only)."""
        self._created: list[Path] = []
        """Bodies created since the directory's last fsync (``defer_fsync`` only)."""
        self._finalizer = weakref.finalize(self, _close_all, self._open)

    def _handle(self, turn: str, path: Path) -> tuple[int, int]:
        """The turn's open descriptor and its end, a torn tail cut off first.

        Opened once per turn (directory made private, tail read); after that one
        ``fstat`` per record: a file removed under the handle is reopened, and one
        whose size is not where hz's last line ended (another writer, a crash of
        one) has its tail read again.
        """
        fd, end = self._open.get(turn, (-1, -1))
        try:
            if fd >= 0:
                info = os.fstat(fd)
                if info.st_nlink == 0:
                    self._drop(turn)
                    fd = -1
                elif info.st_size == end:
                    return fd, end
            if fd < 0:
                ensure_private_dir(self.directory)
                if self.defer_fsync and not os.path.lexists(path):
                    self._created.append(path)
                fd = open_append(path, sync_dir=not self.defer_fsync)
                self._open[turn] = (fd, -1)
            size = os.fstat(fd).st_size
            end = size
            if size:
                reader = open_read(path)
                try:
                    end = last_newline_end(reader, size)
                finally:
                    os.close(reader)
                if end < size:
                    os.ftruncate(fd, end)
        except OSError as error:
            self._drop(turn)
            raise _write_failed(path, error) from error
        except LedgerError:
            self._drop(turn)
            raise
        self._open[turn] = (fd, end)
        return fd, end

    def close(self, turn: str | None = None) -> None:
        """Close the open body of ``turn`` (every open body when None): at a turn's end.

        Appending again reopens it; nothing written is lost by closing (each
        record was fsynced before `append` returned, or is fsynced here).
        """
        if turn is None:
            self.sync()
            _close_all(self._open)
            return
        if turn in self._dirty or self._created:
            self.sync()
        self._drop(turn)

    def _drop(self, turn: str) -> None:
        """Close the descriptor of ``turn`` without a sync (after a failed write)."""
        self._dirty.discard(turn)
        self._paths.pop(turn, None)
        fd, _ = self._open.pop(turn, (-1, -1))
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)

    def path(self, turn: str) -> Path:
        """Where the body of ``turn`` lives."""
        known = self._paths.get(turn)
        if known is None:
            known = self.directory / f"{_check_turn(turn)}.jsonl"
            if len(self._paths) < 256:
                self._paths[turn] = known
        return known

    def append(self, turn: str, record: Mapping[str, Any]) -> str:
        """Append ``record`` to the body of ``turn`` (durable on return); its hash.

        The hash is ``sha256:`` plus the hex SHA-256 of the record's canonical
        line without its newline. A torn last line left by a crash (never
        acknowledged) is cut off first, so records never run together.
        """
        return f"sha256:{sha256_hex(self._write(turn, record))}"

    def add(self, turn: str, record: Mapping[str, Any]) -> None:
        """`append` for a caller that does not use the record's hash (a step's value,
        named by its own content hash): the same write, one SHA-256 fewer."""
        self._write(turn, record)

    def _write(self, turn: str, record: Mapping[str, Any]) -> bytes:
        """Write ``record`` as `append` says; its canonical text without the newline."""
        path = self.path(turn)
        if type(record) is not dict and not isinstance(record, Mapping):
            raise LedgerError(
                "HZL042", f"a body record is a {type(record).__name__}", "pass a mapping"
            )
        try:
            body = canonical(record if type(record) is dict else dict(record)).encode("utf-8")
        except (TypeError, ValueError) as error:
            raise LedgerError(
                "HZL042",
                f"a record for the body of {turn} is not JSON: {error}",
                "pass strings, numbers, booleans, null, lists and objects only",
            ) from error
        line = body + b"\n"
        fd, end = self._handle(turn, path)
        try:
            written = os.write(fd, line)
            if written != len(line):
                os.ftruncate(fd, end)
                raise OSError(0, f"wrote {written} of {len(line)} bytes")
            if self.defer_fsync:
                if turn not in self._dirty:
                    self._synced_end[turn] = end
                self._dirty.add(turn)
            else:
                os.fsync(fd)
        except OSError as error:
            with contextlib.suppress(OSError):
                os.fsync(fd)  # what earlier deferred records wrote still reaches the disk
            self._drop(turn)
            raise _write_failed(path, error) from error
        self._open[turn] = (fd, end + len(line))
        if self.on_write is not None:
            synced = self._synced_end[turn] if turn in self._dirty else end + len(line)
            self.on_write(fd, synced)
        return body

    def sync(self) -> None:
        """Fsync every body written since the last sync (one fsync per such body) and,
        at the same time, the ``turns/`` directory if a body was created since.

        The directory's fsync runs on a worker thread while this one fsyncs the
        bodies (`ledger.fsyncs`: they share a journal commit instead of paying two);
        both have ended when `sync` returns. A no-op when nothing is pending, so it
        is cheap to call often. HZL002 when the disk refuses: the caller must not
        write the line that needs it.
        """
        if not self._dirty and not self._created:
            return
        directory = self._begin_directory() if self._created else None
        error: OSError | None = None
        try:
            for turn in sorted(self._dirty):
                self._sync_one(turn)
            if self.on_sync is not None:
                self.on_sync(tuple(self._created))
        finally:
            if directory is not None:
                error = directory.wait()
                os.close(directory.fd)
        if error is not None:
            raise _write_failed(self.directory, error) from error
        self._created.clear()

    def _begin_directory(self) -> fsyncs.Pending:
        """Start the ``turns/`` directory's fsync on the worker thread."""
        try:
            fd = os.open(
                self.directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
            )
        except OSError as error:
            raise _write_failed(self.directory, error) from error
        return fsyncs.begin(fd)

    def _sync_one(self, turn: str) -> None:
        self._dirty.discard(turn)
        fd, _ = self._open.get(turn, (-1, -1))
        if fd < 0:
            return
        try:
            os.fsync(fd)
        except OSError as error:
            self._drop(turn)
            raise _write_failed(self.path(turn), error) from error

    def read(self, turn: str) -> list[dict[str, Any]] | None:
        """The records of ``turn``'s body in order, or None when the body is gone.

        A torn last line is left out; a damaged complete line is HZL041.
        """
        path = self.path(turn)
        try:
            fd = open_read(path)
        except FileNotFoundError:
            return None
        with os.fdopen(fd, "rb") as handle:
            records: list[dict[str, Any]] = []
            for number, raw in enumerate(handle, start=1):
                if not raw.endswith(b"\n"):
                    break
                try:
                    record = json.loads(raw)
                except (ValueError, UnicodeDecodeError):
                    record = None
                if not isinstance(record, dict):
                    raise LedgerError(
                        "HZL041",
                        f"line {number} of the body {path} is not a JSON object",
                        "the body was edited or damaged; hz never writes such a line",
                    )
                records.append(record)
        return records

    def prune(
        self, *, now: datetime, retention_days: int, ended: Mapping[str, datetime]
    ) -> list[str]:
        """Delete the bodies of turns that ended more than ``retention_days`` before ``now``.

        ``retention_days`` 0 keeps every body. Only regular files named
        ``<turn>.jsonl`` whose turn is in ``ended`` are candidates; links and
        anything else are left alone. Returns the pruned turn ids, sorted; a
        second call returns ``[]``.
        """
        if isinstance(retention_days, bool) or not isinstance(retention_days, int):
            raise LedgerError("HZL043", "retention_days is not a whole number", "pass 0 or more")
        if retention_days < 0:
            raise LedgerError(
                "HZL043",
                f"retention_days is {retention_days}",
                "pass 0 (keep forever) or a number of days",
            )
        if now.tzinfo is None or any(moment.tzinfo is None for moment in ended.values()):
            raise LedgerError(
                "HZL043", "prune needs aware datetimes", "pass times with a time zone (UTC)"
            )
        if retention_days == 0:
            return []
        cutoff = now - timedelta(days=retention_days)
        try:
            dir_fd = os.open(
                self.directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
            )
        except FileNotFoundError:
            return []
        except OSError as error:
            if error.errno in (errno.ELOOP, errno.ENOTDIR):
                raise LedgerError(
                    "HZL001",
                    f"{self.directory} is not a directory hz made; refusing to prune through it",
                    "move it away; hz recreates the directory on the next append",
                ) from error
            raise
        pruned: list[str] = []
        try:
            for name in sorted(os.listdir(dir_fd)):
                match = _body_file_re().fullmatch(name)
                if match is None or ".." in name:
                    continue
                turn = match.group(1)
                if turn not in ended or ended[turn] >= cutoff:
                    continue
                info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                if not stat.S_ISREG(info.st_mode):
                    continue
                os.unlink(name, dir_fd=dir_fd)
                pruned.append(turn)
            if pruned:
                os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        return pruned

    def exists(self, turn: str) -> bool:
        """Whether the body of ``turn`` is still there (no read of its content)."""
        try:
            return stat.S_ISREG(os.lstat(self.path(turn)).st_mode)
        except FileNotFoundError:
            return False


def _write_failed(path: Path, error: OSError) -> LedgerError:
    """HZL002: the disk refused a body write or its fsync."""
    return LedgerError(
        "HZL002",
        f"cannot write {path}: {error.strerror or error}",
        "check the disk (space, permissions, a read-only mount) and retry",
    )
