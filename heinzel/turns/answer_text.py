"""Answering an outcome's free-text question (``hz heinzel answer NAME "text"``).

A turn whose outcome asks a question ends its act step waiting on ``{kind: answer, key}``
(`heinzel.turns.act`). Under the spine's lock the answer goes to
``inbox/answer-<turn>.json`` first (a second answer to the same question reuses the first),
then ``question.answered{id, hash, request}`` under the question's key (``request``, an
optional field: the chat's or ``--request-id``'s id; the text only in the inbox and the
waiting turn's body); a sender that cannot take the lock keeps nothing, so no later
message is taken for an answer it never recorded. Then the
waiting turn resumes and ends ``asked``, then one turn of cause asked under the key
``<id>@answer:<turn>`` runs with the answer as its input ``answer`` (once per key: the
machine never starts a key twice). A process killed after ``question.answered`` and before
that follow-up ran leaves the answer owed: the next ``hz heinzel answer`` (any text; the
first answer stands; the same answer resent by its request id too, `Turns.respond`)
finishes it, and when the answer came as a chat (the record names
its request), the next tick does (`heinzel.tick.handing`), never running the chat as a
turn of its own.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from heinzel.errors import HeinzelError
from heinzel.session.questions import open_asks, unfinished_answers
from heinzel.turns.host import TurnHost, summary
from heinzel.turns.record import IndexedJournal
from ledger.bodies import Bodies
from ledger.files import ensure_private_dir, write_atomic
from machines import Wake, crash_hook
from machines.stores.journal import content_hash

__all__ = ["answer_text", "follow_up"]

CLAIMS = ("turn.started", "turn.skipped", "turn.steered")
"""The lines that deliver a chat under its key (`heinzel.tick.verbs.CLAIM_KINDS`)."""


def _delivered(journal: IndexedJournal, heinzel_id: str, request_id: str | None) -> str | None:
    """The turn a chat of ``request_id`` was delivered into (steered, or a cause of its
    start), read under the lock; None when no turn took it."""
    if request_id is None:
        return None
    from machines import keys

    for event in journal.key_events(keys.asked(heinzel_id, request_id)):
        if event.kind in CLAIMS:
            return str(event.turn)
    return None


def answer_text(
    host: TurnHost,
    heinzel_id: str,
    text: str,
    *,
    adapters: Mapping[str, object],
    recorded: Callable[[], None] | None = None,
    request_id: str | None = None,
    question: str | None = None,
    run: bool = True,
) -> dict[str, Any]:
    """Record the answer to the oldest open question, resume its turn, run the follow-up
    (``recorded`` runs once the answer is in the spine, before any turn resumes: a chat
    takes its request there, so no turn's inbox delivery gets the message a second time;
    ``request_id``: the chat request the answer came in, kept with it so a tick after a
    crash runs the follow-up for that request, never an ordinary chat turn; ``question``:
    the turn id or key of the open question to answer, where several wait (HZH350 when
    none of them is that one)). HZH210 when the question was answered while this waited
    for the lock; ``answered_by`` in the answer when a first answer a killed process left
    (another request's) stands, and ``recorded`` then does not run. ``run=False``: only
    record it, the asking turn's id in ``turn``, for `follow_up` in another process (the
    web head's child)."""
    service = host.service
    name = str(service.queries.row(heinzel_id)["name"])
    waiting = open_asks(service, heinzel_id)
    owed = unfinished_answers(service, heinzel_id)
    if not waiting and owed:
        # answered before a crash: the first answer stands; finish what it started
        return {"name": name, **follow_up(host, heinzel_id, str(owed[0].turn), adapters)}
    if not waiting:
        raise HeinzelError(
            "HZH210",
            f"{name} has no question waiting for an answer",
            f"`hz heinzel show {name}` shows what is pending",
        )
    if not text.strip():
        raise HeinzelError(
            "HZH295", "the answer is empty", f'say it in words: hz heinzel answer {name} "..."'
        )
    chosen = waiting[0]
    if question is not None:
        picked = [e for e in waiting if question in (str(e.turn), str(e.key))]
        if not picked:
            turns = ", ".join(str(e.turn) for e in waiting)
            raise HeinzelError(
                "HZH350",
                f"{name} has no open question {question}",
                f"open questions (by turn): {turns}; `hz heinzel show {name}` shows their words",
            )
        chosen = picked[0]
    key, turn = str(chosen.key), str(chosen.turn)
    inbox = service.home.inbox_dir(heinzel_id)
    ensure_private_dir(inbox)
    path = inbox / f"answer-{turn}.json"
    # the answer file is written under the spine's lock: a sender that cannot take the
    # lock (HZL010) keeps nothing of its answer, so no later message is taken for it
    with service.hold_spine(heinzel_id, on_durable=[crash_hook()]) as spine:
        journal = IndexedJournal(spine, service.index.db, heinzel_id)
        if any(e.kind == "question.answered" for e in journal.key_events(key)):
            raise HeinzelError(
                "HZH210",
                f"{name}'s question of turn {turn} was answered while this waited",
                f"`hz heinzel show {name}` shows what is pending",
            )
        went = _delivered(journal, heinzel_id, request_id)
        if went is not None:
            # a turn took the chat from the inbox while this waited for the lock (a tick's
            # turn, steered or with it as a cause): delivered there, so it is not the answer
            raise HeinzelError(
                "HZH210",
                f"{name}'s message {request_id} went into turn {went} while this waited; "
                "it is not the answer",
                f'the question still waits: hz heinzel answer {name} "..."',
            )
        try:
            kept = json.loads(path.read_text(encoding="utf-8"))
            text = str(kept["message"])  # a first answer a killed process left stands
            whose = kept.get("request") if isinstance(kept.get("request"), str) else None
            ours = request_id is None or whose == request_id
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            whose, ours = request_id, True
            record = {"key": key, "message": text, "at": service.clock().isoformat()}
            if request_id is not None:
                record["request"] = request_id
            write_atomic(path, json.dumps(record).encode("utf-8"))
        digest = content_hash(text)
        Bodies(service.home.session_dir(heinzel_id)).append(
            turn, {"kind": "answer", "key": key, "hash": digest, "text": text}
        )
        data = {"id": path.stem, "hash": digest}
        if whose is not None:
            data["request"] = whose  # the chat whose words answer it (optional field)
        spine.append("question.answered", data, turn=turn, key=key)
    if recorded is not None and ours:
        recorded()
    asked = {"name": name, "question": str(chosen.data.get("question") or "")}
    if not run:
        said = {**asked, "turn": turn}
    else:
        said = {**asked, **follow_up(host, heinzel_id, turn, adapters)}
    return said if ours else {**said, "answered_by": whose or "an earlier answer"}


def follow_up(
    host: TurnHost, heinzel_id: str, turn: str, adapters: Mapping[str, object]
) -> dict[str, Any]:
    """The asking turn resumed (while it still waits) and the one follow-up turn run."""
    service = host.service
    state = service.index.db.execute("SELECT state FROM turns WHERE id = ?", [turn]).fetchone()
    if state is not None and state[0] == "waiting":
        host.resume_turn(heinzel_id, turn, "answer", adapters=adapters)
    follow = Wake("asked", f"{heinzel_id}@answer:{turn}")
    states = host.run_wakes(heinzel_id, [follow], adapters=adapters)
    return summary(states, service.home.session_dir(heinzel_id))
