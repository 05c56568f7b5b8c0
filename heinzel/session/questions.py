"""The questions a Heinzelmännchen asked and nobody answered yet (chat proposals of a write
that wait on the user): one query over the index's keys, the events read from the spine.

Shared by ``hz heinzel answer`` (`heinzel.turns.answer`), ``hz heinzel show`` (the service)
and the web page, so all three agree on what waits on the user.
"""

from __future__ import annotations

from typing import Any

from heinzel.index.notices import ASKING_TURN_OPEN
from heinzel.session.sessions import Sessions
from heinzel.strings.waits import asks, may_it_run
from ledger.event import Event
from ledger.spine import read_events

__all__ = [
    "every_waiting_question",
    "open_asks",
    "open_questions",
    "unfinished_answers",
    "waiting_questions",
]


def every_waiting_question(sessions: Sessions) -> list[dict[str, Any]]:
    """`waiting_questions` of every Heinzelmännchen that has one (one index query finds
    them; only their spines are read), each with ``name``: what `hz drafts` lists beside
    the drafts, so it shows everything waiting on the user."""
    rows = sessions.read_db.execute(
        "SELECT DISTINCT a.heinzel, h.name FROM keys a JOIN heinzel h ON h.id = a.heinzel "  # noqa: S608
        "WHERE a.kind = 'question.asked' AND NOT EXISTS (SELECT 1 FROM keys b "
        "WHERE b.heinzel = a.heinzel AND b.key = a.key AND b.kind = 'question.answered') "
        f"AND {ASKING_TURN_OPEN} ORDER BY h.name",
    ).fetchall()
    return [
        {"name": str(name), **question}
        for heinzel_id, name in rows
        for question in waiting_questions(sessions, str(heinzel_id), str(name))
    ]


def _unanswered(sessions: Sessions, heinzel_id: str) -> list[Event]:
    """Every ``question.asked`` event with no ``question.answered`` under its key, oldest
    first (one index query; the events read at their offsets)."""
    rows = sessions.read_db.execute(
        "SELECT a.line_offset FROM keys a WHERE a.heinzel = ? AND a.kind = 'question.asked' "  # noqa: S608
        "AND NOT EXISTS (SELECT 1 FROM keys b WHERE b.heinzel = a.heinzel AND b.key = a.key "
        f"AND b.kind = 'question.answered') AND {ASKING_TURN_OPEN} ORDER BY a.seq",
        [heinzel_id],
    ).fetchall()
    path = sessions.home.spine_path(heinzel_id)
    events = (next(iter(read_events(path, from_offset=int(offset))), None) for (offset,) in rows)
    return [event for event in events if event is not None]


def open_questions(sessions: Sessions, heinzel_id: str) -> list[Event]:
    """The ``question.asked`` events of proposals not yet answered, oldest first."""
    return [e for e in _unanswered(sessions, heinzel_id) if e.data.get("proposal")]


def open_asks(sessions: Sessions, heinzel_id: str) -> list[Event]:
    """The ``question.asked`` events of an outcome's free-text question (no proposal)
    not yet answered, oldest first."""
    return [e for e in _unanswered(sessions, heinzel_id) if not e.data.get("proposal")]


def waiting_questions(sessions: Sessions, heinzel_id: str, name: str) -> list[dict[str, Any]]:
    """Every question waiting on the user, oldest first, as words a person reads: an
    outcome's free-text question (``kind: question``, its text from ``question.asked``,
    answered by its turn id) and a chat's proposed write (``kind: proposal``, answered yes
    or no by its proposal id), each with the command that answers it. What `show`, the
    page, MCP and the wake line print, so they agree."""
    found: list[dict[str, Any]] = []
    for event in _unanswered(sessions, heinzel_id):
        proposal = event.data.get("proposal")
        common = {"turn": event.turn, "key": event.key, "asked_at": event.ts}
        if proposal:
            tool = str(event.data.get("tool") or "a write")
            found.append(
                {
                    "kind": "proposal",
                    "id": str(proposal),
                    "text": may_it_run(tool),
                    "said": asks(may_it_run(tool)),
                    "tool": tool,
                    "proposal": str(proposal),
                    **common,
                    "answer": f"hz heinzel answer {name} yes --proposal {proposal} (or no)",
                }
            )
        else:
            found.append(
                {
                    "kind": "question",
                    "id": str(event.turn),
                    "text": str(event.data.get("question") or ""),
                    "said": asks(str(event.data.get("question") or "")),
                    **common,
                    "answer": f'hz heinzel answer {name} "..." --question {event.turn}',
                }
            )
    return found


def unfinished_answers(sessions: Sessions, heinzel_id: str) -> list[Event]:
    """The free-text answers (``question.answered`` with an ``answer-<turn>`` id) whose
    follow-up turn (key ``<id>@answer:<turn>``) never started: a process killed between
    recording the answer and running the turn it owes. Oldest first."""
    rows = sessions.read_db.execute(
        "SELECT a.line_offset FROM keys a WHERE a.heinzel = ? AND a.kind = 'question.answered' "
        "ORDER BY a.seq",
        [heinzel_id],
    ).fetchall()
    path = sessions.home.spine_path(heinzel_id)
    found = []
    for (offset,) in rows:
        event = next(iter(read_events(path, from_offset=int(offset))), None)
        if event is None or not str(event.data.get("id", "")).startswith("answer-"):
            continue
        started = sessions.read_db.execute(
            "SELECT 1 FROM keys WHERE heinzel = ? AND key = ? "
            "AND kind IN ('turn.started', 'turn.skipped')",
            [heinzel_id, f"{heinzel_id}@answer:{event.turn}"],
        ).fetchone()
        if started is None:
            found.append(event)
    return found
