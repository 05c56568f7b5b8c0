"""One home's sessions: their spines, written under each one's lock, and the index.

`Sessions` is what every operation stands on: the service's (create, approve, list ...)
and the turn host's. It opens a Heinzelmännchen's spine for writing with the index kept
current (each durable event is applied to the index, then logged, then handed to any
further hooks such as the crash hook), appends single events, and resolves a name or id
from the index. It knows nothing of turns or of the user's verbs.
"""

from __future__ import annotations

import re
import sqlite3
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from heinzel.clock import Clock, clock_from_env
from heinzel.index.queries import Queries
from heinzel.index.schema import ADDED_COLUMNS, INDEX_VERSION, SCHEMA
from heinzel.logs import (
    LogFile,
    bind_heinzel,
    configure_logging,
    enabled,
    get_logger,
    log_machines,
)
from heinzel.store.home import Home
from ledger.errors import HzError, LedgerError
from ledger.event import Event
from ledger.files import ensure_private_dir, is_private_dir

if TYPE_CHECKING:
    from heinzel.capabilities.targets import Protected
    from heinzel.config import Settings
    from ledger.index import Index
    from ledger.spine import Spine

# Start-up by need: reading (a listing, a show, a refusal) loads neither the settings'
# pydantic models, the index writer (sqlite-utils, the projections), structlog nor
# `machines`; each loads with the first thing that needs it.

__all__ = ["Sessions"]

_READ_TABLES = tuple(re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", SCHEMA))
"""The tables a plain read connection must find (else the writer opens and creates them)."""


class Sessions:
    """The spines and the index of one home, with one clock, one configuration and the
    owner's handle."""

    def __init__(
        self,
        home: Home,
        clock: Clock,
        settings: Settings | Callable[[], Settings],
        *,
        owner: str,
        env: Mapping[str, str] | None = None,
    ) -> None:
        """``env`` is the environment the user's model keys are read from (none: no keys);
        ``settings`` may be a function that loads them when first used."""
        self.home = home
        self.clock = clock
        self._settings = settings
        self.owner = owner
        self.env: Mapping[str, str] = env or {}
        self._index: Index | None = None
        self._reader: sqlite3.Connection | None = None
        self._readers: list[sqlite3.Connection] = []  # every one opened, for `close`
        self._held: dict[str, Spine] = {}

    @property
    def settings(self) -> Settings:
        """The configuration, loaded (and checked) the first time something needs it."""
        if callable(self._settings):
            self._settings = self._settings()
        return self._settings

    @classmethod
    def from_environment(cls, home_option: str | None, env: Mapping[str, str]) -> Self:
        """The service a command runs with: ``--home``/``HZ_HOME``, ``HZ_NOW``, the config.

        The configuration files are read and checked when something first needs a setting
        (`settings`); the home comes from ``--home`` or ``HZ_HOME`` without them, as
        ``HZ_HOME`` overrides every file. Logging is set up with the first logger."""
        cwd = Path.cwd()

        def load() -> Settings:
            from heinzel.config import default_site_path, default_user_path, load_settings

            site, user = default_site_path(), default_user_path()
            return load_settings(env=env, cwd=cwd, site=site, user=user).settings

        settings: Settings | Callable[[], Settings] = load
        if home_option:
            home = Home(Path(home_option).expanduser().resolve())
        elif env.get("HZ_HOME"):
            home = Home(_env_home(env["HZ_HOME"], cwd, env))
        else:
            settings = load()
            home = Home(settings.heinzel.home)
        owner = env.get("HZ_USER") or env.get("USER") or "me"
        clock = clock_from_env(env)
        configure_logging(
            "cli",
            # unasked, the warnings go to the home's hz.log and stderr holds a command's
            # coded error only; a level asked for (HZ_LOG_LEVEL) is read on stderr
            stream=sys.stderr if env.get("HZ_LOG_LEVEL") else LogFile(home.heinzel_dir),
            clock=clock,
            level=env.get("HZ_LOG_LEVEL", "warning"),
            later=True,
        )
        return cls(home, clock, settings, owner=owner, env=env)

    # -- plumbing ----------------------------------------------------------------

    @property
    def home_exists(self) -> bool:
        """Whether the home's ``heinzel/`` directory is there, creating nothing (a read of a
        home that is not there yet creates none); HZL001 when a file or a link sits where
        the home or ``heinzel/`` should be, as a write would be refused."""
        return is_private_dir(self.home.heinzel_dir)

    @property
    def protected(self) -> Protected:
        """hz's own places for this home and environment, which no contract reads or
        writes (`heinzel.store.targets`)."""
        from heinzel.store.targets import protected_places

        return protected_places(self.home, self.env)

    @property
    def index(self) -> Index:
        if self._index is None:
            from heinzel.index.due import TickProjection
            from heinzel.index.projection import HeinzelProjection
            from ledger.index import Index

            # reads go to the writer's connection from now on (they see its writes at once);
            # the read connection closes with the last `Queries` still holding it
            self._reader = None
            ensure_private_dir(self.home.heinzel_dir)
            # the source cache's folder with the home's: a first wake creates no folder
            ensure_private_dir(self.home.sources_dir)
            self._index = Index(
                self.home.index_path,
                [HeinzelProjection(self.home), TickProjection(self.home)],
                schema_version=INDEX_VERSION,
            )
            # a spine ahead of the index (a kill between append and update, an index
            # deleted or emptied) is caught up before anything is answered from it
            # (one listing of the sessions' folders; `refresh` skips those without a spine)
            for heinzel_id, error in self._index.refresh(self.home.spine_files()).items():
                log = bind_heinzel(get_logger(), heinzel_id)
                if error is None:
                    log.info("index.caught_up")
                else:
                    log.warning("index.catch_up_failed", code=error.code)
        return self._index

    @property
    def read_db(self) -> sqlite3.Connection:
        """A connection to read the index from: the writer's once it is open; before, a plain
        one when the index is current (`ledger.index_read.open_current`), else the writer's
        (which catches up first). Reads see the same rows either way."""
        if self._index is not None:
            return self._index.db.conn
        if self._reader is None and not self.home_exists:
            # a read of a home that is not there yet creates nothing: it answers from an
            # empty index in memory (a name is then HZH080, as in any home without it)
            self._reader = _empty_index()
        if self._reader is None:
            from ledger.index_read import open_current

            self._reader = open_current(
                self.home.index_path,
                self.home.spine_files(),
                _READ_TABLES,
                [(t, c) for t, c, _ in ADDED_COLUMNS],
                schema_version=INDEX_VERSION,
            )
            if self._reader is None:
                return self.index.db.conn
            self._readers.append(self._reader)
        return self._reader

    def close(self) -> None:
        """Close the index's connections (the writer's and every reader's) without
        checkpointing its WAL (`ledger.index.close_keeping_wal`): what a process's last
        close would otherwise pay, 4 fsyncs for a tick that wrote one row. A command ends
        with it; the service stays usable (the index opens again when next asked)."""
        from ledger.index import close_keeping_wal

        index, readers = self._index, self._readers
        self._index, self._reader, self._readers = None, None, []
        conns = [*readers, *([index.db.conn] if index is not None else [])]
        if conns:
            close_keeping_wal(self.home.index_path, *conns)

    @property
    def queries(self) -> Queries:
        return Queries(self.read_db, self.clock)

    def open_spine(
        self,
        heinzel_id: str,
        *,
        on_durable: Sequence[Callable[[Event], None]] = (),
        lock_timeout: float | None = None,
    ) -> Spine:
        """The session's spine for writing (its lock held), the index kept current;
        ``on_durable`` hooks run after the index's (a crash hook last of all). The lock is
        waited for ``lock_timeout`` seconds (default: the ``lock_timeout`` setting)."""
        from ledger.spine import Spine
        from machines.crashkit.crash import crash_hook

        ensure_private_dir(self.home.session_dir(heinzel_id))
        self.index.catch_up(heinzel_id, self.home.spine_path(heinzel_id))
        self.refuse_newer(heinzel_id)
        spine = Spine.open(
            self.home.session_dir(heinzel_id),
            clock=self.clock,
            lock_timeout=(
                self.settings.heinzel.lock_timeout.total_seconds()
                if lock_timeout is None
                else lock_timeout
            ),
            on_durable=[
                crash_hook(early=True),
                lambda event: self.index.apply(heinzel_id, event),
                _log_event(heinzel_id),
                *on_durable,
            ],
        )
        self.index.catch_up(heinzel_id, spine.path)
        return spine

    def refuse_newer(self, heinzel_id: str) -> None:
        """HZH460 when a newer hz wrote a turn of a later vocabulary into this spine
        (`heinzel.index.versions`): checked before the lock is taken, nothing written."""
        from heinzel.index.versions import newer, newer_error

        found = newer(self.read_db, [heinzel_id])
        if heinzel_id in found:
            rows = self.read_db.execute(
                "SELECT name FROM heinzel WHERE id = ?", [heinzel_id]
            ).fetchall()
            raise newer_error(str(rows[0][0]) if rows else heinzel_id, found[heinzel_id])

    @contextmanager
    def hold_spine(
        self, heinzel_id: str, *, on_durable: Sequence[Callable[[Event], None]] = ()
    ) -> Iterator[Spine]:
        """The spine opened for a turn: while held, `append` writes through it. A line a
        reader could not take (HZL030: one damaged in the middle) is contained before the
        error goes on: `Spine.verify` records its break (``spine.break_contained``), and
        from then on readers leave that line out, so the next turn goes on."""
        with self.open_spine(heinzel_id, on_durable=on_durable) as spine:
            self._held[heinzel_id] = spine
            try:
                yield spine
            except LedgerError as error:
                if error.code != "HZL030" or spine.closed or str(spine.path) not in error.message:
                    raise  # not this spine's line (another's is contained by its own host)
                try:
                    spine.verify()
                except HzError:
                    raise error from None  # not recorded (a full disk): as it was
                raise LedgerError(
                    "HZL030",
                    error.message,
                    "the break is now recorded (spine.break_contained) and readers leave the "
                    "line out: run the command again; `hz heinzel verify` still reports it",
                ) from error
            finally:
                del self._held[heinzel_id]

    def append(
        self,
        heinzel_id: str,
        kind: str,
        data: Mapping[str, Any],
        *,
        short_text: Sequence[str] = (),
        key: str | None = None,
    ) -> Event:
        held = self._held.get(heinzel_id)
        if held is not None:
            return held.append(kind, data, short_text=short_text, key=key)
        with self.open_spine(heinzel_id) as spine:
            return spine.append(kind, data, short_text=short_text, key=key)

    def resolve(self, ref: str, *, write: bool = False) -> dict[str, Any]:
        """The index's row of a name or id; ``write``: a command that will write to its
        spine asks, and is refused (HZH460) when a newer hz wrote there."""
        row = self.queries.resolve(ref)
        if write:
            self.refuse_newer(str(row["id"]))
        return row


def _empty_index() -> sqlite3.Connection:
    """An index of no Heinzelmännchen, in memory: the tables a read may ask of."""
    from heinzel.index.due import TICK_SCHEMA
    from ledger.index import create_watermarks

    conn = sqlite3.connect(":memory:")
    conn.executescript(SCHEMA + TICK_SCHEMA)
    create_watermarks(conn)
    return conn


def _env_home(value: str, cwd: Path, env: Mapping[str, str]) -> Path:
    """``HZ_HOME`` as `heinzel.config.load_settings` reads it: ``~/`` is ``$HOME``, a
    relative path is relative to the working directory."""
    if value.startswith("~/") and "HOME" in env:
        return Path(env["HOME"]) / value[2:]
    return cwd / Path(value)


def _log_event(heinzel_id: str) -> Callable[[Event], None]:
    """Log every durable event by kind and seq, bound to the id (never its data); at a
    level above info, nothing (and structlog is not loaded for it)."""
    log_machines()
    if not enabled("info"):
        return _unlogged
    log = bind_heinzel(get_logger(), heinzel_id)

    def logged(event: Event) -> None:
        bound = log.bind(turn=event.turn) if event.turn else log
        bound.info("appended", kind=event.kind, seq=event.seq)

    return logged


def _unlogged(_event: Event) -> None:
    """An event below the log level: not logged."""
