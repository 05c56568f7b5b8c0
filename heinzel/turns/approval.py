"""Approval turns (ADR 0049 statement 6): what the user changed in an approved draft.

The tick wakes a Heinzelmännchen with cause ``approval`` (key
``<id>@approval:<output>:#<hash of the draft's key>``) when a placed draft's tag line is
gone: each placed draft is its own approval, whatever its text. The
turn's inputs are the draft as placed (from the drafting turn's body) and the text as
approved (the documents adapter's `draft_state`); the model (``model_fast``) turns the
difference into lessons, and act records ``lesson.recorded`` for each and
``approval.observed{approver, share_changed, approved_fp, draft_key}``, never the text.
A deleted section (rejected) is one ``approval.observed{rejected: true, draft_key}``.

An approval wake the tick handed to a turn running in another process (`Inbox.hand`) may
find nothing to learn from when the follow-up runs it: that turn placed a newer draft of
the same output (the older draft is superseded, and its approval counts for nothing,
`heinzel.tick.superseded`), or the section is tagged again. `nothing_to_learn` then takes
the handed request, or every tick would wake it again, and never to any end; the tick
reads the pending drafts again each time, so an approval still to come is not lost.
"""

from __future__ import annotations

import difflib
from typing import Any

from heinzel.capabilities.protocols import Approved, Rejected
from heinzel.engine import InputSpec
from heinzel.store.inbox import Inbox
from ledger.bodies import Bodies
from ledger.event import sha256_hex
from machines import keys

__all__ = ["approval_inputs", "nothing_to_learn", "observe_rejection"]


def _draft_row(service: Any, heinzel_id: str, key: str) -> dict[str, Any] | None:
    """The draft the approval ``key`` names (`machines.keys.approval_names`); a key of the
    older form (the text's hash) names the latest draft of that text, else the output's
    latest draft, as it always did."""
    _, output, part = keys.approval_parts(key)
    rows = [
        dict(r)
        for r in service.index.db.query(
            "SELECT key, turn, hash, state FROM drafts WHERE heinzel = ? AND output = ? "
            "ORDER BY placed_at DESC",
            [heinzel_id, output],
        )
    ]
    for row in rows:
        if keys.approval_names(key, str(row["key"]), row["hash"]):
            return row
    return rows[0] if rows and not part.startswith("#") else None


def _placed_text(service: Any, heinzel_id: str, row: dict[str, Any]) -> str:
    records = Bodies(service.home.session_dir(heinzel_id)).read(str(row["turn"])) or []
    for record in records:
        value = record.get("value")
        if isinstance(value, dict) and value.get("draft") == row["key"]:
            return str(value.get("text", ""))
    return ""


def approval_inputs(
    service: Any, heinzel_id: str, key: str, documents: Any
) -> tuple[tuple[InputSpec, ...], dict[str, Any]] | None:
    """The inputs ``draft`` and ``approved`` and the observation; None while not approved."""
    row = _draft_row(service, heinzel_id, key)
    if row is None or documents is None or row["state"] == "superseded":
        return None  # a superseded draft's approval counts for nothing (tick/superseded.py)
    state = documents.draft_state(row["key"])
    if not isinstance(state, Approved):
        return None
    placed = _placed_text(service, heinzel_id, row)
    ratio = difflib.SequenceMatcher(None, placed.splitlines(), state.text.splitlines()).ratio()
    observed = {
        "key": key,
        "approver": state.approver,
        "share_changed": round(1 - ratio, 3),
        "approved_fp": "sha256:" + sha256_hex(state.text.encode("utf-8")),
        "draft_key": row["key"],
    }
    inputs = (InputSpec("draft", placed, "body"), InputSpec("approved", state.text, "documents"))
    return inputs, observed


def observe_rejection(service: Any, heinzel_id: str, key: str, documents: Any) -> bool:
    """A draft whose section the user deleted: ``approval.observed{rejected, draft_key}``
    under the approval key, once (no turn, no model call). True when it was rejected."""
    row = _draft_row(service, heinzel_id, key)
    if row is None or documents is None:
        return False
    if not isinstance(documents.draft_state(row["key"]), Rejected):
        return False
    seen = service.index.db.query(
        "SELECT 1 FROM keys WHERE heinzel = ? AND key = ? AND kind = 'approval.observed'",
        [heinzel_id, key],
    )
    if not list(seen):
        service.append(
            heinzel_id, "approval.observed", {"rejected": True, "draft_key": row["key"]}, key=key
        )
    return True


def nothing_to_learn(service: Any, heinzel_id: str, key: str, documents: Any) -> None:
    """An approval wake with no approved draft to learn from: a rejection is observed
    (`observe_rejection`), and the request that handed the wake (if any) is taken."""
    observe_rejection(service, heinzel_id, key, documents)
    Inbox(service.home, heinzel_id).take_handed(key, at=service.clock())
