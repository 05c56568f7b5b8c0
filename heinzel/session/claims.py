"""Where a request id went: the one claim of a message's delivery (ADR 0049 statement 14).

A request id (a chat's, an answer's, a wake's) is claimed once, by the first of: a steer
(``turn.steered`` under ``<id>@<request id>``), a question's answer (the answer's record
``inbox/answer-<turn>.json`` names the request, as ``question.answered{request}`` does),
its own turn's start or skip (a turn whose keys include ``<id>@<request id>``), or a
queued follow-up (``turn.requested`` under that key). `claim_of` reads them from the index
and the inbox; every surface that takes a request id (``hz heinzel chat|answer|wake
--request-id``, MCP, the page's POSTs) asks it first, so a resend says where the message
went and runs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from heinzel.store.inbox import Inbox
from ledger.records import frozen_record
from ledger.spine import read_events

if TYPE_CHECKING:
    from heinzel.session.sessions import Sessions

__all__ = ["Claim", "already", "claim_of"]


@frozen_record
class Claim:
    """The line that delivered a request: ``kind`` (``steered``, ``answer``, ``turn`` or
    ``requested``) and the turn it went into (or answered, or follows)."""

    kind: str
    turn: str


def claim_of(sessions: Sessions, heinzel: str, request_id: str) -> Claim | None:
    """The claim of ``request_id``'s delivery to ``heinzel``, or None (not delivered)."""
    key = f"{heinzel}@{request_id}"
    steered = _keyed(sessions, heinzel, key, "turn.steered")
    if steered is not None:
        return Claim("steered", steered)
    answered = Inbox(sessions.home, heinzel).answered_chats().get(request_id)
    if answered is not None:
        return Claim("answer", answered)
    row = sessions.read_db.execute(
        "SELECT id FROM turns WHERE heinzel = ? AND (key = ? OR EXISTS "
        "(SELECT 1 FROM json_each(turns.keys) WHERE value = ?)) "
        "ORDER BY start_seq LIMIT 1",
        [heinzel, key, key],
    ).fetchone()
    if row is not None:
        return Claim("turn", str(row[0]))
    requested = _keyed(sessions, heinzel, key, "turn.requested")
    return Claim("requested", requested) if requested is not None else None


def already(sessions: Sessions, heinzel: str, claim: Claim) -> dict[str, Any]:
    """A resend's answer: ``delivered`` in words, the ``turn`` and, for a turn of its
    own, how that turn is recorded (``state``, ``disposition``, ``reason``)."""
    if claim.kind == "steered":
        said = f"already delivered: steered into turn {claim.turn}"
    elif claim.kind == "answer":
        said = f"already delivered: answers the question of turn {claim.turn}"
    elif claim.kind == "requested":
        said = (
            f"already delivered: queued as a follow-up of turn {claim.turn} "
            "(it or the next tick runs it; do not send it again)"
        )
    else:
        row = sessions.read_db.execute(
            "SELECT state, disposition, reason FROM turns WHERE heinzel = ? AND id = ?",
            [heinzel, claim.turn],
        ).fetchone()
        state = str(row[0]) if row else None
        how = {"running": "its turn runs now", "waiting": "its turn waits"}.get(
            state or "", "its turn ran then"
        )
        fields = ("state", "disposition", "reason")
        recorded = {f: v for f, v in zip(fields, row or (), strict=False) if v is not None}
        return {
            "delivered": f"already delivered ({how}; nothing ran again)",
            "turn": claim.turn,
            **recorded,
        }
    return {"delivered": said, "turn": claim.turn}


def _keyed(sessions: Sessions, heinzel: str, key: str, kind: str) -> str | None:
    """The turn of the first ``kind`` line under ``key``, or None."""
    row = sessions.read_db.execute(
        "SELECT line_offset FROM keys WHERE heinzel = ? AND key = ? AND kind = ? "
        "ORDER BY seq LIMIT 1",
        [heinzel, key, kind],
    ).fetchone()
    if row is None:
        return None
    path = sessions.home.spine_path(heinzel)
    for event in read_events(path, from_offset=int(row[0])):
        return str(event.turn)
    return None
