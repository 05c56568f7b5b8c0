"""What the home spent today, open turns included (the daily cap, ADR 0050 statement 5).

The index adds a turn's cost to its Heinzelmännchen's ``cost_today`` when the turn ends
(``turn.finished``, ``turn.skipped``: the fold's spend, every request and every
reservation no request settled) and each ``usage`` event at once. A turn still open
(running in another process, waiting, or left by a crash) has spent money too: each of
its ``model.request{usd}`` lines, and its reservation no request settled yet
(``model.reserved{usd}`` not followed by a ``model.request`` or ``model.released``: a
request in flight, or one a crash cut off, counted at its worst case). `spent_today`
adds that spend so far, read from the spine from each open turn's start offset (a handful
of turns, the tail of their spines).

`hold_day` is the home's spend lock (``heinzel/spend.lock``, a flock): a turn reads the
day's spend and writes its next reservation under it, and holds it for nothing else (never
across the request), so two turns starting at the same moment can't both pass the cap on
each other's zero (docs/engine.md, "The reservation protocol").
"""

from __future__ import annotations

import dataclasses
import os
import sqlite3
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from decimal import Decimal
from typing import Any

from heinzel.errors import HeinzelError
from heinzel.store.home import Home
from ledger.errors import HzError, LedgerError
from ledger.event import Event, format_ts
from ledger.files import ensure_private_dir
from ledger.index import Index
from ledger.lock import Sleep, take_lock
from ledger.reading import read_events

__all__ = [
    "SPEND_LOCK",
    "hold_day",
    "open_spend",
    "spent_on_spines",
    "spent_today",
    "today_each",
    "trial_spend",
    "turn_spend",
]

_SPEND = ("model.request", "model.reserved", "model.released")
SPEND_LOCK = "spend.lock"
"""The home's spend lock, in ``HZ_HOME/heinzel/``."""


Reads = Index | sqlite3.Connection
"""The index to read: the writer, or a plain read connection (`Sessions.read_db`)."""


def _db(index: Reads) -> Any:
    return index.db if isinstance(index, Index) else index


def spent_today(index: Reads, home: Home, now: datetime, *, mine: Collection[str] = ()) -> float:
    """USD spent on ``now``'s UTC day across the home: ended turns and usage from the
    index, plus the spend so far of every open turn (``mine``: Heinzelmännchen whose open
    turns the caller counts itself)."""
    day = format_ts(now)[:10]
    row = (
        _db(index)
        .execute("SELECT COALESCE(SUM(cost_today), 0) FROM heinzel WHERE cost_day = ?", [day])
        .fetchone()
    )
    return float(row[0] or 0.0) + open_spend(index, home, day, mine=mine)


def open_spend(
    index: Reads, home: Home, day: str, *, mine: Collection[str] = (), only: str | None = None
) -> float:
    """The spend on ``day`` of every turn not yet ended (``only``: of one Heinzelmännchen):
    its ``model.request`` lines and its open reservation; a spine that cannot be read
    counts nothing here (verify and the tick report it)."""
    rows = (
        _db(index)
        .execute(
            "SELECT id, heinzel, start_offset FROM turns "
            "WHERE ended_at IS NULL AND start_offset IS NOT NULL ORDER BY heinzel, start_offset"
        )
        .fetchall()
    )
    total = 0.0
    for turn, heinzel, offset in rows:
        if heinzel in mine or (only is not None and heinzel != only):
            continue
        try:
            total += _turn_spend(home, str(heinzel), str(turn), int(offset), day)
        except (HzError, OSError, ValueError):
            continue
    return total


def today_each(index: Reads, home: Home, day: str, *, only: str | None = None) -> dict[str, float]:
    """What each Heinzelmännchen spent on ``day`` (``only``: one of them), the one figure
    every surface shows as "today" (list, show, ``--json``, the page, MCP): its ended
    turns and usage from the index, plus what its open turns spent and still hold
    reserved, as the daily cap counts it (`spent_today` is the sum over the home). Each
    figure rounded to 9 decimals, so no float dust reaches a surface; one with nothing
    spent is left out."""
    sql = "SELECT id, cost_today FROM heinzel WHERE cost_day = ? AND cost_today != 0"
    params: list[Any] = [day]
    if only is not None:
        sql += " AND id = ?"
        params.append(only)
    each: dict[str, float] = {str(i): float(usd) for i, usd in _db(index).execute(sql, params)}
    rows = (
        _db(index)
        .execute(
            "SELECT id, heinzel, start_offset FROM turns "
            "WHERE ended_at IS NULL AND start_offset IS NOT NULL ORDER BY heinzel, start_offset"
        )
        .fetchall()
    )
    for turn, heinzel, offset in rows:
        if only is not None and heinzel != only:
            continue
        try:
            usd = _turn_spend(home, str(heinzel), str(turn), int(offset), day)
        except (HzError, OSError, ValueError):
            continue  # a spine that cannot be read counts nothing here (verify reports it)
        if usd:
            each[str(heinzel)] = each.get(str(heinzel), 0.0) + usd
    return {heinzel: round(usd, 9) for heinzel, usd in each.items() if round(usd, 9)}


def _turn_spend(home: Home, heinzel: str, turn: str, offset: int, day: str) -> float:
    events = read_events(home.spine_path(heinzel), from_offset=offset, kinds=_SPEND)
    return turn_spend(e for e in events if e.turn == turn and e.ts[:10] == day)


def turn_spend(events: Iterable[Event]) -> float:
    """What one turn's events say it spent: its ``model.request`` lines, and each
    ``model.reserved`` no request settled or ``model.released`` let go (the fold's rule,
    `machines.core.fold.TurnState.spend_usd`)."""
    spent, reserved = 0.0, 0.0
    for event in events:
        usd = float(event.data.get("usd") or 0.0)
        if event.kind == "model.reserved":
            spent += reserved  # the one before was never settled: it counts
            reserved = usd
        elif event.kind == "model.request":
            spent, reserved = spent + usd, 0.0
        elif event.kind == "model.released":
            reserved = 0.0
    return spent + reserved


def spent_on_spines(home: Home, day: str) -> float:
    """The home's spend on ``day`` from its spines alone, no index: each turn's
    `turn_spend` of the day's lines, every ``usage`` event, and each trial's reservations
    (``model.reserved`` outside a turn, settled by its ``usage {kind: trial}`` or let go
    by its ``model.released``: `turn_spend`'s rule by trial). What `spent_today` reads
    through the index must equal it (a check for tests; it reads every spine whole)."""
    total = 0.0
    for heinzel in home.session_ids():
        by_turn: dict[str, list[Event]] = {}
        kinds = (*_SPEND, "usage")
        for event in read_events(home.spine_path(heinzel), kinds=kinds):
            if event.ts[:10] != day:
                continue
            trial = event.turn is None and event.data.get("kind") == "trial"
            if trial and event.data.get("trial"):
                settles = event.kind == "usage"  # the trial's reservation, as a request does
                one = dataclasses.replace(event, kind="model.request") if settles else event
                by_turn.setdefault("trial " + str(event.data["trial"]), []).append(one)
            elif event.kind == "usage":
                total += float(event.data.get("usd") or 0.0)
            else:
                by_turn.setdefault(str(event.turn), []).append(event)
        total += sum(turn_spend(events) for events in by_turn.values())
    return total


@contextmanager
def hold_day(
    index: Index,
    home: Home,
    clock: Callable[[], datetime],
    *,
    timeout: float,
    sleep: Sleep,
) -> Iterator[Decimal]:
    """The home's spend lock, held while entered; gives the day's spend (every turn's,
    the caller's open one included). HZH330 when another process held it ``timeout`` s."""
    ensure_private_dir(home.heinzel_dir)
    try:
        fd = take_lock(home.heinzel_dir / SPEND_LOCK, timeout, sleep)
    except LedgerError as error:
        if error.code != "HZL010":
            raise
        raise HeinzelError(
            "HZH330",
            f"the spend lock of {home.root} stayed held for {timeout:g} s",
            "another hz process is reserving a model request; retry, or raise lock_timeout",
        ) from None
    try:
        yield Decimal(str(round(spent_today(index, home, clock()), 9)))  # no float dust
    finally:
        os.close(fd)


def trial_spend(index: Reads, heinzel: str, month: str) -> tuple[float, int, int]:
    """USD, tokens and cached tokens of ``heinzel``'s `hz heinzel try` requests of
    ``month`` (``YYYY-MM``), from the index's ``trials`` rows: each settled request's
    ``usd``, and each reservation nothing settled (a trial killed while the provider held
    its request) at its worst case, as the caps count it. Show reports it as the cause
    ``trial``; a released reservation counts nothing."""
    row = (
        _db(index)
        .execute(
            "SELECT COALESCE(SUM(CASE WHEN state = 'settled' THEN usd "
            "WHEN state IN ('open', 'lost') THEN reserved ELSE 0 END), 0), "
            "COALESCE(SUM(tokens), 0), COALESCE(SUM(tokens_cached), 0) FROM trials "
            "WHERE heinzel = ? AND at >= ? AND at < ?",
            [heinzel, month, month + "~"],
        )
        .fetchone()
    )
    return float(row[0] or 0.0), int(row[1] or 0), int(row[2] or 0)
