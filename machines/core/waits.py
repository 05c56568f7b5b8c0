"""Waits are stored conditions: a pure decision of which waiting turns wake, and why.

A waiting turn holds no process, no lock and no open file: it is its
``turn.waiting{step, until, on?, output?}`` line (and the host's index row). Each
tick the host calls `due_waits` with the time and the current `Facts`; the facts
are data checked at decision time, so an answer or approval that arrived before
its wait was recorded is not lost. Precedence for one turn: ``superseded`` (another
turn placed a draft for the same output after this turn started waiting: the
turn ends abandoned, it does not resume), then ``asked`` (the user said go on),
then the ``on`` condition (``source``, ``approval``, ``answer``), then ``timer``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import field
from datetime import datetime
from typing import Any, NamedTuple

from ledger.event import Event, parse_ts
from ledger.records import frozen_record
from machines.core.fold import TurnState
from machines.errors import MachineError
from machines.vocabulary import WAIT_ON


@frozen_record
class PendingWait:
    """One waiting turn's condition, as its ``turn.waiting`` line recorded it."""

    turn: str
    step: str
    until: str
    seq: int
    on: Mapping[str, Any] | None = None
    output: str | None = None

    @classmethod
    def from_event(cls, event: Event) -> PendingWait:
        """The wait a ``turn.waiting`` event records."""
        data = event.data
        on = data.get("on")
        return cls(
            turn=str(event.turn),
            step=str(data.get("step")),
            until=str(data.get("until")),
            seq=event.seq,
            on=dict(on) if isinstance(on, Mapping) else None,
            output=data.get("output"),
        )

    @classmethod
    def from_state(cls, state: TurnState) -> PendingWait | None:
        """The wait of a folded turn, or None when it is not waiting."""
        if state.state != "waiting" or state.wait is None:
            return None
        wait = state.wait
        on = wait.get("on")
        return cls(
            turn=state.turn,
            step=str(wait.get("step")),
            until=str(wait.get("until")),
            seq=int(wait.get("seq", 0)),
            on=dict(on) if isinstance(on, Mapping) else None,
            output=wait.get("output"),
        )


@frozen_record
class Facts:
    """What the host knows now: current fingerprints, observed approvals and
    answers (by key), turns the user asked to resume, and the latest draft placed
    per output as ``(turn, seq)``."""

    fingerprints: Mapping[str, str] = field(default_factory=dict)
    approvals: frozenset[str] = frozenset()
    answers: frozenset[str] = frozenset()
    asked: frozenset[str] = frozenset()
    drafts: Mapping[str, tuple[str, int]] = field(default_factory=dict)


class Due(NamedTuple):
    """A waiting turn to wake and what woke it (``superseded``: end it instead)."""

    turn: str
    woken_by: str


def check_wait(on: Mapping[str, Any] | None, until: str | None = None) -> None:
    """Refuse an ``on`` condition of an unknown shape or an ``until`` that is not a
    time (HZM030)."""
    if until is not None:
        try:
            parse_ts(until)
        except (TypeError, ValueError):
            raise MachineError(
                "HZM030",
                f"a wait's until must be an ISO 8601 time, got {until!r}",
                "pass a UTC time such as 2026-11-02T12:00:00Z",
            ) from None
    if on is None:
        return
    kind = on.get("kind")
    needed = {"source": ("input", "fingerprint_not"), "approval": ("key",), "answer": ("key",)}
    if kind not in WAIT_ON or any(not on.get(f) for f in needed[str(kind)]):
        raise MachineError(
            "HZM030",
            f"a wait condition must be one of {', '.join(WAIT_ON)} with its fields, got {on!r}",
            "use {kind: source, input, fingerprint_not}, {kind: approval, key} "
            "or {kind: answer, key}",
        )


def _on_matched(on: Mapping[str, Any] | None, facts: Facts) -> str | None:
    if on is None:
        return None
    kind = on.get("kind")
    if kind == "source":
        current = facts.fingerprints.get(str(on.get("input")))
        return "source" if current is not None and current != on.get("fingerprint_not") else None
    if kind == "approval":
        return "approval" if on.get("key") in facts.approvals else None
    if kind == "answer":
        return "answer" if on.get("key") in facts.answers else None
    return None


def _superseded(wait: PendingWait, facts: Facts) -> bool:
    if wait.output is None or wait.output not in facts.drafts:
        return False
    turn, seq = facts.drafts[wait.output]
    return turn != wait.turn and seq > wait.seq


def due_waits(now: datetime, waits: Iterable[PendingWait], facts: Facts) -> list[Due]:
    """The waiting turns that wake at ``now``, in the order given, with their reason."""
    due: list[Due] = []
    for wait in waits:
        if _superseded(wait, facts):
            due.append(Due(wait.turn, "superseded"))
        elif wait.turn in facts.asked:
            due.append(Due(wait.turn, "asked"))
        elif (matched := _on_matched(wait.on, facts)) is not None:
            due.append(Due(wait.turn, matched))
        elif parse_ts(wait.until) <= now:
            due.append(Due(wait.turn, "timer"))
    return due
