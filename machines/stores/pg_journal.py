"""A `Journal` and a `Body` in Postgres, and the queue of due jobs workers claim.

For a runner whose workers run on several machines (docs/embedding.md, "Many machines
on Postgres"). The record is the spine's, held in tables instead of a file:

- ``hz_events``: one row per event, the envelope's canonical line as the spine would
  write it (the same events, the same ``prev`` chain: each row's ``prev`` is the hash of
  the row before), with its seq, turn, key, kind and hash as columns to look up. Appends
  are serialised by a transaction-level advisory lock (`CHAIN_LOCK`), so the chain has
  one order across every worker; an append is durable when its commit returns (the
  server's ``synchronous_commit``, on by default).
- ``hz_keyed``: every key an event speaks for (`machines.stores.journal.keys_of`), so the key
  rule and the effect ledger read a key's events without a scan.
- ``hz_bodies``: the turn body, content addressed as on disk.
- ``hz_jobs``: the queue. A job is ``due`` (from ``due_at``), ``running`` (claimed by a
  worker until ``lease_until``, in the host's clock, renewed by the worker's heartbeat
  while the job runs: `renewing`) or ``done``. A worker claims one with
  ``FOR UPDATE SKIP LOCKED`` (no two claim one row at once), then takes the key's
  session advisory lock (`try_key_lock`) for as long as the job runs: that lock, not the
  lease, keeps one key in one worker at a time. A killed worker's connection ends and
  the server drops its lock at once; its lease then lets another worker claim the job
  once it lapses, and the key rule resumes the turn from the record, its effects
  settled by the ledger (performed once per key; probed after a crash). A connection lost
  while its worker lives (a server restart) is `lost`: the job stops at its next query
  (HZM105 for ``run``; ``work`` connects again and makes the job due: `release`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from ledger.event import Clock, Event, canonical, format_ts, make_event, sha256_hex
from ledger.guard import check_line_size, checked_append
from ledger.reading import parse_event
from machines.crashkit.crash import crash_at
from machines.errors import MachineError
from machines.stores.journal import OnDurable, expand_carried, keys_of
from machines.vocabulary import TERMINAL_KINDS

CHAIN_LOCK = 0x687A_6A6F_7572_6E6C
"""The advisory lock (transaction level) every append takes: one chain, one order."""

SCHEMA_LOCK = 0x687A_7363_6865_6D61
"""The advisory lock under which the tables are made (two workers starting at once)."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS hz_events (
    seq bigint PRIMARY KEY,
    turn text,
    key text,
    kind text NOT NULL,
    hash text NOT NULL,
    line text NOT NULL
);
CREATE INDEX IF NOT EXISTS hz_events_turn ON hz_events (turn, seq);
CREATE TABLE IF NOT EXISTS hz_keyed (
    key text NOT NULL,
    seq bigint NOT NULL REFERENCES hz_events (seq),
    PRIMARY KEY (key, seq)
);
CREATE TABLE IF NOT EXISTS hz_bodies (
    turn text NOT NULL,
    digest text NOT NULL,
    value text NOT NULL,
    PRIMARY KEY (turn, digest)
);
CREATE TABLE IF NOT EXISTS hz_jobs (
    key text PRIMARY KEY,
    cause text,
    state text NOT NULL DEFAULT 'due',
    due_at timestamptz NOT NULL DEFAULT now(),
    lease_until timestamptz,
    worker text,
    claims integer NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS hz_jobs_due ON hz_jobs (state, due_at);
"""


def connect(url: str) -> Any:
    """An autocommit psycopg connection to ``url`` with the tables made; HZM100 when
    psycopg is not installed or the server cannot be reached."""
    try:
        import psycopg
    except ImportError:
        raise MachineError(
            "HZM100",
            "Host(postgres=...) needs psycopg 3, which is not installed",
            "install the extra: pip install 'hz[postgres]' (psycopg[binary])",
        ) from None
    try:
        conn = psycopg.connect(url, autocommit=True)
    except psycopg.Error as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise MachineError(
            "HZM100",
            f"cannot connect to the Postgres journal: {first}",
            "check the URL (postgresql://user@host:port/database) and that the server runs",
        ) from None
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        conn.execute(SCHEMA)
    return conn


def _event(line: str) -> Event:
    event = parse_event(line.encode("utf-8"), 0)
    if event is None:
        raise MachineError(
            "HZM101",
            "a row of hz_events is not a spine envelope",
            "the table was written by something else than hz; verify() names the row",
        )
    return event


class PostgresJournal:
    """A `Journal` in Postgres tables (see the module): the spine's events and chain."""

    def __init__(self, conn: Any, clock: Clock, *, on_durable: Iterable[OnDurable] = ()) -> None:
        self.conn = conn
        self._clock = clock
        self._on_durable = list(on_durable)

    def append(
        self,
        kind: str,
        data: Mapping[str, Any] | None = None,
        *,
        turn: str | None = None,
        key: str | None = None,
        short_text: Sequence[str] = (),
    ) -> Event:
        """Append one event in one transaction (durable on return; then ``on_durable``):
        the spine's checks (`ledger.guard.checked_append`, the line's size), the chain
        under `CHAIN_LOCK`."""
        payload = checked_append(kind, data, turn=turn, key=key, short_text=short_text)
        with self.conn.transaction():
            self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (CHAIN_LOCK,))
            last = self.conn.execute(
                "SELECT seq, hash FROM hz_events ORDER BY seq DESC LIMIT 1"
            ).fetchone()
            event = make_event(
                seq=last[0] + 1 if last else 1,
                ts=format_ts(self._clock()),
                prev=last[1] if last else None,
                kind=kind,
                data=payload,
                turn=turn,
                key=key,
            )
            raw = event.line()
            check_line_size(kind, len(raw))
            line = raw.decode("utf-8").rstrip("\n")
            self.conn.execute(
                "INSERT INTO hz_events (seq, turn, key, kind, hash, line) "
                "VALUES (%s, %s, %s, %s, %s, %s)",
                (event.seq, turn, key, kind, event.hash, line),
            )
            speaks = keys_of(event)
            if speaks:
                with self.conn.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO hz_keyed (key, seq) VALUES (%s, %s)",
                        [(one, event.seq) for one in speaks],
                    )
            crash_at(f"pg-commit:{kind}")  # inserted, not committed (tests: HZ_CRASH_AT)
        for callback in self._on_durable:
            callback(event)
        return event

    def turn_events(self, turn: str) -> list[Event]:
        """The events of one turn, in order."""
        rows = self.conn.execute(
            "SELECT line FROM hz_events WHERE turn = %s ORDER BY seq", (turn,)
        ).fetchall()
        return [_event(row[0]) for row in rows]

    def key_events(self, key: str) -> list[Event]:
        """Every event that speaks for ``key``, in order (carried lines written out)."""
        rows = self.conn.execute(
            "SELECT e.line FROM hz_keyed k JOIN hz_events e ON e.seq = k.seq "
            "WHERE k.key = %s ORDER BY e.seq",
            (key,),
        ).fetchall()
        return [e for e in expand_carried(_event(r[0]) for r in rows) if key in keys_of(e)]

    def turn_ended(self, turn: str) -> bool:
        """Whether ``turn`` has a terminal line (the key rule's question)."""
        row = self.conn.execute(
            "SELECT 1 FROM hz_events WHERE turn = %s AND kind = ANY(%s) LIMIT 1",
            (turn, sorted(TERMINAL_KINDS)),
        ).fetchone()
        return row is not None

    def recorded_done(self, key: str) -> str | None:
        """The hash of the last ``effect.done`` for ``key``, read from the table."""
        done = [e for e in self.key_events(key) if e.kind == "effect.done" and e.key == key]
        return str(done[-1].data.get("hash")) if done else None

    def verify(self) -> list[str]:
        """The breaks of the chain, one sentence each (none when every row's hash is its
        line's and each ``prev`` is the row before's hash, seq counting up by one)."""
        breaks: list[str] = []
        prev: str | None = None
        seq = 0
        with self.conn.cursor() as cur:
            cur.execute("SELECT seq, hash, line FROM hz_events ORDER BY seq")
            for row_seq, digest, line in cur:
                event = parse_event(line.encode("utf-8"), 0)
                if event is None or sha256_hex(line.encode("utf-8")) != digest:
                    breaks.append(f"row {row_seq}: its line does not hash to its hash")
                elif event.prev != prev or event.seq != seq + 1 or row_seq != event.seq:
                    breaks.append(f"row {row_seq}: does not chain to the row before")
                prev, seq = digest, row_seq
        return breaks


class PostgresBody:
    """A `Body` in ``hz_bodies``: a put is committed when it returns (another worker
    resuming the turn reads it), without waiting for the server's flush
    (``synchronous_commit`` off for that transaction only). That is the body's rule
    (`machines.stores.journal.Body`): it survives the process, not a power cut; and the append
    that records its hash next is a synchronous commit, which flushes the server's log
    up to it, so both are durable together: one flush per step, not two."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def put(self, turn: str, digest: str, value: Any) -> None:
        """Keep ``value`` under ``(turn, digest)`` (idempotent)."""
        with self.conn.transaction():
            self.conn.execute("SET LOCAL synchronous_commit TO off")
            self.conn.execute(
                "INSERT INTO hz_bodies (turn, digest, value) VALUES (%s, %s, %s) "
                "ON CONFLICT DO NOTHING",
                (turn, digest, canonical(value)),
            )

    def get(self, turn: str, digest: str) -> Any:
        """The value under ``(turn, digest)``; `KeyError` when there is none."""
        row = self.conn.execute(
            "SELECT value FROM hz_bodies WHERE turn = %s AND digest = %s", (turn, digest)
        ).fetchone()
        if row is None:
            raise KeyError((turn, digest))
        return json.loads(row[0])

    def close(self) -> None:
        """Nothing to close per body (the host closes the connection)."""


def lost(conn: Any) -> bool:
    """Whether ``conn`` is gone (the server restarted or the network cut it): its jobs
    stop, and the server has dropped its locks."""
    return bool(conn.closed or conn.broken)


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def connection_lost(key: str, error: BaseException) -> MachineError:
    """HZM105: the connection was lost while the job ``key`` ran."""
    return MachineError(
        "HZM105",
        f"the connection to the Postgres journal was lost while the job {key} ran "
        f"({_first_line(error)}); the job stopped where its record ends",
        "call run again once the server answers: the key rule resumes the job from its "
        "record (a worker's work() reconnects and does it by itself)",
    )


def unreachable(error: BaseException, refused: BaseException, waited: float) -> MachineError:
    """HZM106: the connection was lost and no new one was made within ``waited`` s."""
    return MachineError(
        "HZM106",
        f"the connection to the Postgres journal was lost ({_first_line(error)}) and the "
        f"server took no new one within {waited:g} s ({_first_line(refused)})",
        "check that the server runs, then start the worker again: jobs it left are "
        "claimed once their lease lapses; raise Host(lock_timeout=) to wait longer",
    )


def worker_name() -> str:
    """This process as the queue names a worker: ``host:pid``."""
    return f"{socket.gethostname()}:{os.getpid()}"


def try_key_lock(conn: Any, key: str) -> bool:
    """Take ``key``'s session advisory lock if no other session holds it."""
    row = conn.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (key,)).fetchone()
    return bool(row[0])


def key_unlock(conn: Any, key: str) -> None:
    conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (key,))


def key_holder(conn: Any, key: str) -> str:
    """Who holds ``key``'s advisory lock: the backend pid and client address, or
    ``nobody now``."""
    row = conn.execute(
        "SELECT a.pid, a.client_addr, a.application_name FROM pg_locks l "
        "JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' "
        "AND l.granted AND ((l.classid::bigint << 32) | l.objid::bigint) = "
        "hashtextextended(%s, 0)",
        (key,),
    ).fetchone()
    if row is None:
        return "nobody now"
    return f"the server backend {row[0]} (client {row[1] or 'local'})"


def enqueue(conn: Any, key: str, cause: str | None = None) -> None:
    """Make the job ``key`` due now (a done job again: the key rule leaves a finished one)."""
    conn.execute(
        "INSERT INTO hz_jobs (key, cause) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE "
        "SET state = 'due', due_at = now(), cause = EXCLUDED.cause "
        "WHERE hz_jobs.state = 'done'",
        (key, cause),
    )


def claim(conn: Any, worker: str, lease: float, now: datetime) -> tuple[str, str | None] | None:
    """Claim one due job (or one whose lease lapsed before ``now``, the host's clock) with
    ``FOR UPDATE SKIP LOCKED``, leased until ``now`` plus ``lease`` seconds: ``(key,
    cause)``, or None when none is due."""
    row = conn.execute(
        "UPDATE hz_jobs SET state = 'running', worker = %(worker)s, claims = claims + 1, "
        "lease_until = %(now)s + make_interval(secs => %(lease)s) WHERE key = ("
        "SELECT key FROM hz_jobs WHERE (state = 'due' AND due_at <= now()) "
        "OR (state = 'running' AND lease_until < %(now)s) "
        "ORDER BY due_at FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING key, cause",
        {"worker": worker, "lease": lease, "now": now},
    ).fetchone()
    return (str(row[0]), row[1]) if row is not None else None


def renew(conn: Any, key: str, worker: str, lease: float, now: datetime) -> None:
    """Lease the running job ``key`` to ``worker`` until ``now`` plus ``lease`` seconds
    (its heartbeat: the caller holds the key's lock, so the job is its own)."""
    conn.execute(
        "UPDATE hz_jobs SET lease_until = %s + make_interval(secs => %s), worker = %s "
        "WHERE key = %s AND state = 'running'",
        (now, lease, worker, key),
    )


@contextlib.asynccontextmanager
async def renewing(
    conn: Any, key: str, worker: str, lease: float, clock: Clock
) -> AsyncIterator[None]:
    """While the body runs, renew the job's lease every third of ``lease`` (awaited on
    the event loop), so a job longer than its lease is not claimed by another worker
    while this one lives; a killed worker renews nothing and its lease lapses. A
    renewal that fails (the connection lost) ends the heartbeat; the job meets the
    same error at its next query."""

    async def beat() -> None:
        import psycopg

        while True:
            await asyncio.sleep(lease / 3)
            try:
                renew(conn, key, worker, lease, clock())
            except psycopg.Error:
                return

    heart = asyncio.get_running_loop().create_task(beat())
    try:
        yield
    finally:
        heart.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await heart


def release(conn: Any, key: str, worker: str) -> None:
    """Make the job ``key`` that ``worker`` ran due again at once (the worker lost its
    connection while it ran, and its turn stopped): any worker claims it and resumes it."""
    conn.execute(
        "UPDATE hz_jobs SET state = 'due', due_at = now(), lease_until = NULL "
        "WHERE key = %s AND state = 'running' AND worker = %s",
        (key, worker),
    )


def finish(conn: Any, key: str) -> None:
    """Mark the job ``key`` done."""
    conn.execute("UPDATE hz_jobs SET state = 'done', lease_until = NULL WHERE key = %s", (key,))


def unfinished(conn: Any) -> int:
    """How many jobs are not done (due, or running under a lease)."""
    row = conn.execute("SELECT count(*) FROM hz_jobs WHERE state <> 'done'").fetchone()
    return int(row[0])
