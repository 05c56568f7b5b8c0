"""The derived-index base: a SQLite file of rows folded from many spines.

Readers that write nothing need none of this module's set-up: `ledger.index_read` opens
the same file with plain sqlite3 when it is current (start-up by need).

The index is never authoritative. Callers register `Projection` objects (the
`heinzel` package registers its own); each turns events into rows, per
*source* (one spine, e.g. one Heinzelmännchen id). Per source the index keeps a
watermark: the seq, hash and offset of the last spine line it has seen. Rows and
watermark change in one transaction, and only for lines already durable
(`Index.apply` is meant to be a spine's ``on_durable`` callback). `catch_up`
applies what a spine has beyond its watermark and rebuilds the source when the
watermark's line is no longer in the spine as it was; `rebuild` refolds every
source from its spine, giving exactly the rows the incremental updates gave.

Many processes share one index (a tick, wakes and chats of other
Heinzelmännchen, `list` and `show`). WAL lets readers go on while one writer
writes; every write transaction takes the write lock up front (``BEGIN
IMMEDIATE``, `Index.write`) and waits for it up to `BUSY_SECONDS`, so no
transaction reads a snapshot and then fails to upgrade it. A SQLite failure is
never raised bare: `sqlite_error` turns it into a coded `LedgerError` (HZL052 busy
past the wait, HZL053 a refused write,
HZL054 another I/O error, HZL051 anything else).

Closing keeps the WAL (`close_keeping_wal`): the last connection to close would
otherwise checkpoint it (2 fsyncs) and delete it, so that the next writer's first
commit syncs a new WAL's header and its folder (2 more). What the index holds is
derived, so it needs no fsync of its own; SQLite's automatic checkpoint (every
1,000 pages written) keeps the WAL bounded.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, NamedTuple, Protocol, Self, cast

from ledger.connection import IndexConnection
from ledger.errors import HzError, LedgerError
from ledger.event import Event, sha256_hex
from ledger.files import ensure_private_dir, last_newline_end, open_read, private_file
from ledger.reading import Upgrades, iter_lines, parse_event

if TYPE_CHECKING:
    from sqlite_utils import Database

__all__ = [
    "BUSY_SECONDS",
    "WATERMARKS",
    "Index",
    "Projection",
    "Watermark",
    "behind",
    "close_keeping_wal",
    "create_watermarks",
    "spine_tail",
    "sqlite_error",
    "write_transaction",
]

WATERMARKS = "_watermarks"
_MARK_SQL = "SELECT seq, hash, at FROM _watermarks WHERE source = ?"
_SOURCES_SQL = "SELECT source FROM _watermarks ORDER BY source"
_SET_MARK_SQL = (
    "INSERT INTO _watermarks (source, seq, hash, at, size) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (source) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, "
    "at = excluded.at, size = excluded.size"
)
BUSY_SECONDS = 60.0


def close_keeping_wal(path: Path, *connections: sqlite3.Connection) -> None:
    """Close ``connections`` to the WAL-mode database at ``path`` without the checkpoint
    SQLite runs when the last connection to a database closes.

    That checkpoint fsyncs the WAL and the database file and deletes the WAL, and the next
    write then fsyncs a new WAL's header and its folder: 4 fsyncs for a process that
    wrote one row. A read-only connection is opened first and closed last: while it holds
    its shared lock no other connection's close checkpoints, and a read-only connection's
    close never does (sqlite.org/walformat.html, "File Lifecycles"), so the WAL stays for
    the next process to write on (Python 3.11's sqlite3 cannot set
    ``SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE``). When that connection cannot be opened, the
    connections close as before, checkpoint and all."""
    keeper: sqlite3.Connection | None = None
    try:
        uri = f"{Path(path).absolute().as_uri()}?mode=ro"
        keeper = sqlite3.connect(uri, uri=True, timeout=BUSY_SECONDS)
        keeper.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()  # its shared lock
    except sqlite3.Error:
        if keeper is not None:
            keeper.close()
        keeper = None
    try:
        for conn in connections:
            # one made in another thread can only be closed there (it then closes as before)
            with contextlib.suppress(sqlite3.ProgrammingError):
                conn.close()
    finally:
        if keeper is not None:
            keeper.close()


def create_watermarks(conn: sqlite3.Connection) -> None:
    """The table of each source's watermark: its last applied seq, that line's hash, the
    line's offset (``at``) and the offset just past it (``size``: the spine's size while
    the watermark is its last line, NULL when not known), so a reader tells a current
    spine by a ``stat``. An index made before ``size`` gets the column here."""
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {WATERMARKS} "
        "(source TEXT PRIMARY KEY, seq INTEGER, hash TEXT, at INTEGER, size INTEGER)"
    )
    columns = {str(row[1]) for row in conn.execute(f"PRAGMA table_info({WATERMARKS})")}
    if "size" not in columns:
        conn.execute(f"ALTER TABLE {WATERMARKS} ADD COLUMN size INTEGER")


_BUSY = (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED: their extended codes share the low byte
_FULL = frozenset({13, 778})  # SQLITE_FULL, SQLITE_IOERR_WRITE (ENOSPC, EFBIG)
_IOERR = 10  # SQLITE_IOERR: its extended codes share the low byte


def sqlite_error(path: Path, error: sqlite3.Error) -> LedgerError:
    """A coded error for a SQLite failure on the index at ``path``.

    Told apart by SQLite's extended result code, not its message: "disk I/O error"
    covers a refused write (a full disk or file size limit, HZL053) as well as a
    failed read, lock or memory map (HZL054).
    """
    text = str(error)
    code = getattr(error, "sqlite_errorcode", None)
    name = getattr(error, "sqlite_errorname", None) or "unknown"
    primary = None if code is None else code & 0xFF
    lowered = text.lower()
    if primary in _BUSY or (code is None and ("locked" in lowered or "busy" in lowered)):
        return LedgerError(
            "HZL052",
            f"the index {path} stayed busy (other hz processes writing) for {BUSY_SECONDS:.0f} s",
            "nothing was lost; retry the command when the other processes are done",
        )
    if code in _FULL or (code is None and "full" in lowered):
        return LedgerError(
            "HZL053",
            f"the disk holding the index {path} refused a write ({text}: full, or over the "
            "file size limit); nothing was lost",
            "free space on that disk (or raise the file size limit), then run "
            "`hz heinzel reindex`: what the spine recorded is kept",
        )
    if primary == _IOERR:
        return LedgerError(
            "HZL054",
            f"an I/O error on the index {path} ({name}); nothing was lost",
            "run the command again; if it keeps failing, check the disk and the files' "
            "permissions, then `hz heinzel reindex` rebuilds the index from the spines",
        )
    return LedgerError(
        "HZL051",
        f"{path} is not an index hz can use: {text}",
        "the index is derived: move the file away and rebuild it from the spines",
    )


def _db_path(db: Database) -> Path:
    for row in db.conn.execute("PRAGMA database_list"):
        if row[1] == "main":
            return Path(row[2])
    return Path("index")


@contextlib.contextmanager
def write_transaction(db: Database, path: Path | None = None) -> Iterator[Database]:
    """A write transaction holding the write lock from its start (``BEGIN IMMEDIATE``).

    Waits for another writer as long as the connection's busy timeout; nested,
    it is a savepoint of the outer transaction. Commits on success, rolls back
    on any error, and raises SQLite's failures as coded `LedgerError`
    (`sqlite_error`).
    """
    conn = db.conn
    try:
        if conn.in_transaction:
            with db.atomic():
                yield db
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield db
            conn.execute("COMMIT")
        except BaseException:
            db.rollback()  # a no-op when the error already ended the transaction
            raise
    except sqlite3.Error as error:
        raise sqlite_error(path or _db_path(db), error) from error


def spine_tail(spine_path: Path) -> tuple[int, str] | None:
    """``(seq, hash)`` of the spine's last complete line, read from its end; None for
    an empty or missing spine, ``(-1, "")`` when that line is damaged."""
    try:
        fd = open_read(spine_path)
    except FileNotFoundError:
        return None
    try:
        end = last_newline_end(fd, os.fstat(fd).st_size)
        if end == 0:
            return None
        start = last_newline_end(fd, end - 1)
        body = os.pread(fd, end - 1 - start, start)
    finally:
        os.close(fd)
    event = parse_event(body, start)
    return (-1, "") if event is None else (event.seq, event.hash)


def behind(marks: Mapping[str, tuple[int, str]], sources: Mapping[str, Path]) -> list[str]:
    """The sources whose spine's last line is not their watermark ``(seq, hash)``: what
    `Index.refresh` catches up. A missing or empty spine is never behind; neither is a
    source with a watermark whose spine ends in a damaged line (its writer contains it)."""
    found = []
    for source, spine_path in sources.items():
        tail = spine_tail(spine_path)
        if tail is None or marks.get(source) == tail:
            continue
        if source in marks and tail == (-1, ""):
            continue
        found.append(source)
    return found


def _present(sources: Mapping[str, str | Path]) -> dict[str, Path]:
    """The sources whose spine is there: a missing spine is never behind, so a list of
    session folders (`heinzel.store.home.Home.spine_files`) whose sessions have no spine
    costs one ``access`` each (no exception, no open). Anything there but odd (a link,
    even a dangling one, or a folder) is kept, for `behind` to refuse as before; a spine
    in a folder this process cannot search reads as missing here, and its writer's open
    says what is wrong."""
    access, there = os.access, os.F_OK
    return {
        source: Path(spine)
        for source, spine in sources.items()
        if access(spine, there, follow_symlinks=False)
    }


class Projection(Protocol):
    """Folds spine events into rows of its own tables, keyed by source."""

    name: str

    def create(self, db: Database) -> None:
        """Create this projection's tables if they are missing."""

    def apply(self, db: Database, source: str, event: Event) -> None:
        """Update rows for one event of ``source`` (inside the index's transaction)."""

    def clear(self, db: Database, source: str) -> None:
        """Delete every row derived from ``source``."""


class Watermark(NamedTuple):
    """The last spine line of a source the index has seen."""

    seq: int
    hash: str
    offset: int
    size: int | None = None
    """Where the spine ends while this line is its last (``offset`` plus the line's
    length), None when not known."""


class Index:
    """A derived SQLite index over many spines (WAL mode, file 0600)."""

    def __init__(
        self,
        path: Path,
        projections: Sequence[Projection],
        *,
        upgrades: Upgrades | None = None,
        schema_version: int | None = None,
    ) -> None:
        """``schema_version``: the version of the projections' schema this code writes,
        kept in the file's ``user_version``; a file of a later version (a newer hz made
        it) is HZL071 before anything is written to it."""
        self.path = Path(path)
        self.projections = tuple(projections)
        self._upgrades = upgrades
        ensure_private_dir(self.path.parent)
        try:
            private_file(self.path)
        except OSError as error:
            raise LedgerError(
                "HZL051",
                f"cannot open the index {self.path}: {error.strerror or error}",
                "the index is derived: move the file away and rebuild it from the spines",
            ) from error
        # sqlite-utils' Database only where a projection asks for more than hz's own
        # calls (`ledger.connection`): opening the index imports nothing
        connection = sqlite3.connect(self.path, timeout=BUSY_SECONDS)
        self.db = cast("Database", IndexConnection(connection))
        try:
            if connection.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                connection.execute("PRAGMA journal_mode=wal")
            self.db.execute("PRAGMA synchronous=NORMAL")
            with self.write():
                if schema_version is not None:
                    self._check_schema(schema_version)
                create_watermarks(self.db.conn)
                for projection in self.projections:
                    projection.create(self.db)
        except sqlite3.Error as error:
            self.db.close()
            raise sqlite_error(self.path, error) from error
        except LedgerError:
            self.db.close()
            raise

    def _check_schema(self, version: int) -> None:
        """HZL071 for an index a newer hz made (its ``user_version`` later than
        ``version``); an older or new one is marked with ``version``."""
        (found,) = self.db.conn.execute("PRAGMA user_version").fetchone()
        if found > version:
            raise LedgerError(
                "HZL071",
                f"the index {self.path} was made by a newer hz (schema {found}; this hz "
                f"writes schema {version}): nothing was written to it",
                "upgrade hz; or, to go on with this one, move the file away (the index is "
                "derived: the next command rebuilds it from the spines)",
            )
        if found < version:
            self.db.conn.execute(f"PRAGMA user_version = {int(version)}")

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
        """Close the database connection, keeping the WAL (`close_keeping_wal`)."""
        close_keeping_wal(self.path, self.db.conn)

    def write(self) -> contextlib.AbstractContextManager[Database]:
        """A write transaction holding the write lock from its start (`write_transaction`)."""
        return write_transaction(self.db, self.path)

    @contextlib.contextmanager
    def reading(self) -> Iterator[Database]:
        """Queries over the index, their SQLite failures raised as coded errors."""
        try:
            yield self.db
        except sqlite3.Error as error:
            raise sqlite_error(self.path, error) from error

    def watermark(self, source: str) -> tuple[int, str] | None:
        """``(seq, hash)`` of the last line of ``source`` the index has seen, or None."""
        mark = self._mark(source)
        return None if mark is None else (mark.seq, mark.hash)

    def sources(self) -> list[str]:
        """Every source the index holds a watermark for."""
        return [str(row[0]) for row in self.db.execute(_SOURCES_SQL)]

    def apply(self, source: str, event: Event) -> None:
        """Apply one durable event of ``source``: rows and watermark in one transaction.

        An event already applied is ignored. One that does not chain to the
        watermark (lines were missed, e.g. a crash between append and apply) is
        HZL050: call `catch_up` first.
        """
        with self.write():
            mark = self._mark(source)
            if mark is not None and (event.hash == mark.hash or event.seq <= mark.seq):
                return
            if event.prev != (None if mark is None else mark.hash):
                raise LedgerError(
                    "HZL050",
                    f"the index missed lines of {source} before seq {event.seq}",
                    "call Index.catch_up for this source when its spine is opened",
                )
            self._fold(source, event)
            end = event.offset + event.size if event.size > 0 else None
            self._set_mark(source, Watermark(event.seq, event.hash, event.offset, end))

    def catch_up(self, source: str, spine_path: Path) -> int:
        """Apply the lines of ``spine_path`` after the watermark; the number applied.

        When the watermark's line is not in the spine as it was (the file was
        cut, replaced or edited), the source's rows are cleared and rebuilt.
        Damaged lines give no rows; the watermark moves past them with the next
        good line (a damaged last line may yet be cut by the writer, which then
        chains its ``spine.torn_tail`` to the good line before it). Rows and the
        watermark commit together.
        """
        applied = 0
        with self.write():
            mark = self._mark(source)
            start = 0
            if mark is not None:
                start = self._after(spine_path, mark)
                if start < 0:
                    self._clear(source)
                    mark, start = None, 0
            seq = 0 if mark is None else mark.seq
            last: Watermark | None = None
            for offset, raw in iter_lines(spine_path, start):
                if not raw.endswith(b"\n"):
                    break
                body = raw[:-1]
                event = parse_event(body, offset)
                if event is not None:
                    self._fold(source, event)
                    seq = event.seq
                    applied += 1
                    last = Watermark(seq, event.hash, offset, offset + len(raw))
            if last is not None:
                self._set_mark(source, last)
        return applied

    def refresh(self, sources: Mapping[str, str | Path]) -> dict[str, HzError | None]:
        """Catch up every source whose spine's last line is not its watermark.

        What a process sees on opening the index: a kill between a spine's append and
        the index's update, or an index deleted or emptied under sessions on disk,
        would otherwise read as "nothing there". Each spine's tail (seq and line hash)
        is read from its end, compared with the watermark without taking the write
        lock, and only the sources behind are caught up. Returns them, each with the
        coded error its catch-up raised (one source's failure never stops the rest).
        """
        spines = _present(sources)
        if not spines:  # no spine on disk: none is behind, and no watermark is read
            return {}
        with self.reading():
            query = f"SELECT source, seq, hash, at, size FROM {WATERMARKS}"  # noqa: S608
            rows = {row[0]: Watermark(*row[1:]) for row in self.db.execute(query)}
        marks = {source: (mark.seq, mark.hash) for source, mark in rows.items()}
        caught: dict[str, HzError | None] = {}
        late = behind(marks, spines)
        for source in late:
            try:
                self.catch_up(source, spines[source])
                caught[source] = None
            except HzError as error:
                caught[source] = error
        self._size_marks({s: p for s, p in spines.items() if s not in late}, rows)
        return caught

    def _size_marks(self, sources: Mapping[str, Path], marks: Mapping[str, Watermark]) -> None:
        """Store where each current spine ends when its watermark does not say (an index
        made before ``size``, a line applied by an older hz), so readers see it current by
        a ``stat`` (`ledger.index_read.open_current`). A spine that does not end in its
        watermark's line is left as it is."""
        found: dict[str, Watermark] = {}
        for source, spine_path in sources.items():
            mark = marks.get(source)
            if mark is None:
                continue
            try:
                size = os.lstat(spine_path).st_size
            except OSError:
                continue
            if mark.size != size and self._after(Path(spine_path), mark) == size:
                found[source] = mark._replace(size=size)
        if found:
            with self.write():
                for source, mark in found.items():
                    self._set_mark(source, mark)

    def rebuild(self, sources: Mapping[str, Path]) -> None:
        """Refold every source from its spine; sources not named lose their rows."""
        with self.write():
            for source in set(self.sources()) | set(sources):
                self._clear(source)
            for source, spine_path in sources.items():
                self.catch_up(source, spine_path)

    def forget(self, source: str) -> None:
        """Drop every row and the watermark of ``source`` (its spine was removed)."""
        with self.write():
            self._clear(source)

    def _fold(self, source: str, event: Event) -> None:
        if self._upgrades is not None:
            event = self._upgrades.upgrade(event)
        for projection in self.projections:
            projection.apply(self.db, source, event)

    def _clear(self, source: str) -> None:
        for projection in self.projections:
            projection.clear(self.db, source)
        self.db.execute(f"DELETE FROM {WATERMARKS} WHERE source = ?", [source])  # noqa: S608

    def _mark(self, source: str) -> Watermark | None:
        # plain statements, kept prepared by sqlite3's statement cache: this runs on
        # every spine line, where sqlite-utils' generic upsert cost a third of a turn
        row = self.db.conn.execute(_MARK_SQL, (source,)).fetchone()
        return None if row is None else Watermark(int(row[0]), str(row[1]), int(row[2]))

    def _set_mark(self, source: str, mark: Watermark) -> None:
        self.db.conn.execute(_SET_MARK_SQL, (source, mark.seq, mark.hash, mark.offset, mark.size))

    @staticmethod
    def _after(spine_path: Path, mark: Watermark) -> int:
        """The offset after the watermark's line, or -1 when that line is not there."""
        try:
            for offset, raw in iter_lines(spine_path, mark.offset):
                if raw.endswith(b"\n") and sha256_hex(raw[:-1]) == mark.hash:
                    return offset + len(raw)
                return -1
        except LedgerError:
            return -1
        return -1
