"""The tick and the inbox (ADR 0049 statement 14): wakes handed to a turn running in
another process, and requests no running turn took.

- `hand`: a Heinzelmännchen whose spine lock another process holds (a turn running
  there) is not waited for. Each of its new wakes becomes a request file of kind
  ``requested`` (`Inbox.hand`, idempotent by the wake's key) and the tick moves on. That
  turn's host records ``turn.requested{cause}`` under the wake's key at its next step
  boundary and runs one follow-up turn after it (`heinzel.turns.delivery`), so the wake is
  neither lost nor run twice: the request stays pending until a turn has the key.
- `inbox_wakes`: the requests still pending for a Heinzelmännchen no process runs a turn of
  (a chat or a handed wake that came after the last poll, or whose process died after
  ``turn.requested``) become wakes: a chat an asked wake keyed ``<id>@<request id>``, a
  handed wake its own. A request whose key is claimed (a turn has it, or a turn was
  steered with the chat: `Planner.taken`) is only taken, so each is delivered once.
  Requests are found by their marks (`Inbox.marked`), dropped once delivered. An
  unreadable request (HZH233) is reported and skips that Heinzelmännchen.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any

from heinzel.errors import HeinzelError
from heinzel.session.open_turns import lock_held
from heinzel.session.sessions import Sessions
from heinzel.store.inbox import Inbox, Request, handed
from heinzel.tick.isolate import isolated
from machines import keys
from machines.keys import Wake

__all__ = ["hand", "inbox_wakes"]

Taken = Callable[[Iterable[str]], Collection[str]]
"""The keys among these that already have a turn (`Planner.taken`)."""


def hand(
    service: Sessions, heinzel: str, wakes: Sequence[Wake], errors: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """Write each of ``wakes`` into the inbox for the running turn; what was handed (for
    the tick's report), or None when nothing was (or writing failed, then in ``errors``)."""
    if not wakes:
        return None
    inbox = Inbox(service.home, heinzel)
    done: list[Wake] = []
    with isolated(service, heinzel, errors, "hand"):
        for wake in wakes:
            if _chat_of(inbox, wake) is not None:
                continue  # its chat request is in the inbox already: the turn delivers it
            inbox.hand(wake.cause, wake.key, at=service.clock())
            done.append(wake)
    if not done:
        return None
    return {
        "id": heinzel,
        "causes": sorted({w.cause for w in done}),
        "keys": [w.key for w in done],
    }


def inbox_wakes(
    service: Sessions,
    awake: Collection[str],
    taken: Taken,
    errors: list[dict[str, Any]],
) -> list[tuple[str, Wake, str]]:
    """``(heinzel, wake, since)`` for every request pending in an inbox with no turn to
    take it (``awake``: the Heinzelmännchen the index shows running)."""
    home = service.home
    found: list[tuple[str, Wake, str]] = []
    for heinzel, marked in Inbox.marked(home).items():
        if heinzel in awake or lock_held(home.session_dir(heinzel) / "lock"):
            continue
        with isolated(service, heinzel, errors, "inbox"):
            found += _pending(service, heinzel, marked, taken)
    return found


def _pending(
    service: Sessions, heinzel: str, marked: Sequence[str], taken: Taken
) -> list[tuple[str, Wake, str]]:
    """The requests pending for one Heinzelmännchen: taken (delivered), or wakes."""
    inbox = Inbox(service.home, heinzel)
    read = [(rid, inbox.read(rid)) for rid in marked]
    pending: list[tuple[Request, Wake]] = []
    for rid, request in read:
        done = request is None or (request.taken is not None and request.kind != "chat")
        wake = None if request is None or done else _wake(heinzel, request)
        if request is None or wake is None:
            if request is not None and request.taken is None:
                inbox.take(rid, at=service.clock())  # garbled: nothing to wake
            inbox.unmark(rid)
        else:
            pending.append((request, wake))
    if not pending:
        return []
    answers = inbox.answered_chats()
    pending = [
        (r, Wake("asked", f"{heinzel}@answer:{answers[r.request_id]}"))
        if r.kind == "chat" and r.request_id in answers
        else (r, w)
        for r, w in pending
    ]
    has = taken(w.key for _, w in pending)
    wakes = []
    for request, wake in pending:
        # claimed; or a chat taken with no claim on record: steered before steers had keys
        if wake.key in has or (request.kind == "chat" and request.taken):
            inbox.take(request.request_id, at=service.clock())
            inbox.unmark(request.request_id)
        else:
            wakes.append((heinzel, wake, request.at))
    return wakes


def _chat_id(wake: Wake) -> str | None:
    """The chat request id an asked wake's key names (``<id>@rq-...``), else None."""
    rid = wake.key.partition("@")[2]
    return rid if wake.cause == "asked" and rid.startswith("rq-") else None


def _chat_of(inbox: Inbox, wake: Wake) -> Request | None:
    """The chat request behind an asked wake, when the inbox holds one."""
    rid = _chat_id(wake)
    try:
        request = inbox.read(rid) if rid is not None else None
    except HeinzelError:
        return None
    return request if request is not None and request.kind == "chat" else None


def _wake(heinzel: str, request: Request) -> Wake | None:
    if request.kind == "chat":
        return Wake("asked", keys.asked(heinzel, request.request_id))
    found = handed(request)
    return Wake(*found) if found is not None else None
