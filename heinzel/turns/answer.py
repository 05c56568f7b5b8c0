"""Answering a chat turn's proposed write (``hz heinzel answer``): the answer goes to the
inbox first, then ``question.answered`` under the question's key, then the waiting turn
resumes (`heinzel.turns.chat` explains the write gate)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from heinzel.errors import HeinzelError
from heinzel.session.questions import open_questions
from heinzel.turns.chat import inbox_answer
from heinzel.turns.failure import cause_of
from heinzel.turns.host import TurnHost
from ledger.files import ensure_private_dir, write_atomic
from machines import crash_hook

__all__ = ["answer"]


def answer(
    host: TurnHost,
    heinzel_id: str,
    approved: bool,
    proposal: str | None,
    *,
    adapters: Mapping[str, object],
    resume: bool = True,
) -> dict[str, Any]:
    """Answer a chat proposal: the inbox file, ``question.answered``, then the turn resumes
    (``resume=False``: the caller resumes it elsewhere, as the web head's child process does;
    a tick resumes it too, its wait's condition met)."""
    service = host.service
    name = str(service.queries.row(heinzel_id)["name"])
    waiting = open_questions(host.service, heinzel_id)
    if not waiting:
        raise HeinzelError(
            "HZH210",
            f"{name} has no question waiting for an answer",
            f"`hz heinzel show {name}` shows what is pending",
        )
    ids = [str(e.data["proposal"]) for e in waiting]
    if proposal is None and len(waiting) > 1:
        raise HeinzelError(
            "HZH211",
            f"{name} has {len(waiting)} questions waiting: {', '.join(ids)}",
            "name one with --proposal ID",
        )
    chosen = (
        waiting[0]
        if proposal is None
        else next((e for e in waiting if e.data["proposal"] == proposal), None)
    )
    if chosen is None:
        raise HeinzelError(
            "HZH212",
            f"{name} has no open proposal {proposal}",
            f"open proposals: {', '.join(ids)}",
        )
    call_id, key, turn = str(chosen.data["proposal"]), str(chosen.key), str(chosen.turn)
    inbox = service.home.inbox_dir(heinzel_id)
    ensure_private_dir(inbox)
    first = inbox_answer(inbox, call_id)
    if first is None:
        record = {
            "proposal": call_id,
            "key": key,
            "approved": approved,
            "at": service.clock().isoformat(),
        }
        write_atomic(inbox / f"answer-{call_id}.json", json.dumps(record).encode("utf-8"))
    else:
        approved = first
    with service.hold_spine(heinzel_id, on_durable=[crash_hook()]) as spine:
        spine.append("question.answered", {"approved": approved}, turn=turn, key=key)
    if not resume:
        return {"name": name, "proposal": call_id, "approved": approved, "turn": turn}
    state = host.resume_turn(heinzel_id, turn, "answer", adapters=adapters)
    return {
        "name": name,
        "proposal": call_id,
        "approved": approved,
        "turn": turn,
        "state": state.state if state else "ended",
        "disposition": state.disposition if state else None,
        "reason": state.reason if state else None,
        "error": state.error if state else None,
        "usd": state.spend_usd if state else 0.0,
        "cause": cause_of(service.home.session_dir(heinzel_id), turn),
    }
