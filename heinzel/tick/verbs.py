"""The user's verbs on a Heinzelmännchen: chat, resume, stop, retry, and approving a draft.

Each message is first a request file (`heinzel.store.inbox`), then a spine line or a turn:

- ``chat`` while a turn's question waits for the user (and no turn runs elsewhere): the
  message is the answer, as ``hz heinzel answer NAME "text"`` gives it (once per key); a
  chat after that is an ordinary chat.
- ``chat`` while a turn runs in another process (its spine lock is held): the request
  waits in the inbox and that turn's host delivers it (`heinzel.turns.delivery`: a steer
  before its next model request, a follow-up request after think). While a turn a dead
  process left is open, it waits too: the tick's recovery resumes that turn, whose host
  delivers it. Otherwise: a new turn of cause asked, run here, once the spine's lock is
  free. The sender checks under the lock whether another turn claimed the request
  meanwhile (a steer, or a turn with its key: `CLAIM_KINDS`); then it runs nothing and
  says ``delivered into turn tn-...``. When the lock stays held past ``lock_timeout``, the
  message is queued for that turn or the next tick, never to be sent again.
- ``resume``: the waiting turn now, ``woken_by: asked``.
- ``stop``: a turn running elsewhere gets a stop request in the inbox, honoured at its next
  step boundary; a turn a dead process left open ends ``abandoned stopped`` here.
- ``retry``: a turn of cause retry keyed ``<id>@retry:<request id>`` (once per request id,
  whatever turn is last by then; the old form ``<id>@retry:<parent>:<request id>`` reads
  alike), the hint in the inbox; the host forks it after the parent's gather and
  supersedes its draft.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from heinzel.errors import HeinzelError
from heinzel.ids import new_id
from heinzel.session.claims import Claim, already, claim_of
from heinzel.session.open_turns import abandon_turn, lock_held
from heinzel.session.questions import open_asks, waiting_questions
from heinzel.session.sessions import Sessions
from heinzel.store.inbox import Inbox, Request
from ledger.errors import HzError

if TYPE_CHECKING:
    from heinzel.tick.tick import TurnRunner
    from ledger.event import Event

# `machines` loads inside the verbs that write (chat, retry): a refusal reads the index
# alone (start-up by need).

__all__ = ["Verbs"]

CLAIM_KINDS = ("turn.steered", "turn.started", "turn.skipped")
"""The spine lines that claim a chat's delivery under its key: exactly one per chat."""
QUEUED_BUSY = (
    "queued: a turn runs in another process; it or the next tick delivers the message "
    "(do not send it again)"
)
QUEUED_STOPPED = "queued: stopped before its turn started; the next tick delivers the message"
QUEUED_ANSWER = (
    "queued: another process held the lock, so this is not the question's answer; the next "
    "tick delivers the message as a chat of its own (do not send it again; the question "
    "still waits: hz heinzel answer)"
)
ANSWERED_QUEUED = (
    "answers the open question (recorded; another process holds the lock now, so the next "
    "tick goes on with its turn: do not send it again)"
)
QUEUED_ANSWERED = (
    "queued: the question already has an earlier answer; the next tick delivers the "
    "message as a chat of its own (do not send it again)"
)
QUEUED_OPEN = (
    "queued: a turn a stopped process left is open; the next tick resumes it and delivers "
    "the message (do not send it again)"
)


def _into(claim: tuple[str, str], when: str) -> dict[str, Any]:
    """Where a chat went that another turn took: ``delivered into turn tn-...``."""
    kind, turn = claim
    how = "steered into it" if kind == "turn.steered" else "run by another process"
    return {"turn": turn, "delivered": f"delivered into turn {turn} ({how} {when})"}


class Verbs:
    """chat, resume, stop and retry over one home, with the host that runs turns."""

    def __init__(
        self,
        service: Sessions,
        runner: TurnRunner,
        adapters: Mapping[str, object],
        answer: Callable[[str, str, Callable[[], None], str], Mapping[str, Any]] | None = None,
    ) -> None:
        """``answer(heinzel_id, text, recorded, request_id)`` answers an open question in words (the
        turns' `heinzel.turns.Turns.answer_text`; ``recorded`` runs once the answer is in
        the spine); without it a chat never answers one."""
        self.service = service
        self.runner = runner
        self.adapters = adapters
        self.answer = answer

    # -- helpers -------------------------------------------------------------------

    def _request(self, heinzel_id: str, kind: str, message: str, request_id: str | None) -> Request:
        rid = request_id or "rq-" + new_id(self.service.clock)[3:]
        inbox = Inbox(self.service.home, heinzel_id)
        return inbox.write(rid, kind, message, at=self.service.clock())

    def _one(self, sql: str, heinzel_id: str) -> str | None:
        row = self.service.read_db.execute(sql, [heinzel_id]).fetchone()
        return str(row[0]) if row else None

    def _running(self, heinzel_id: str) -> str | None:
        return self._one(
            "SELECT id FROM turns WHERE heinzel = ? AND state = 'running' "
            "ORDER BY started_at DESC, start_seq DESC LIMIT 1",
            heinzel_id,
        )

    def _elsewhere(self, heinzel_id: str) -> bool:
        return lock_held(self.service.home.session_dir(heinzel_id) / "lock")

    def _busy(self, heinzel_id: str, turn: str | None) -> bool:
        """Whether ``turn`` (the running one, if any) runs in another process now."""
        return turn is not None and self._elsewhere(heinzel_id)

    @staticmethod
    def _refuse_held(row: Mapping[str, Any], what: str) -> None:
        """A paused or retired one runs no turn, whoever asks (as ``hz heinzel wake``
        refuses): HZH050 before the inbox is written, so nothing is delivered later."""
        state = str(row["state"])
        if state not in ("paused", "retired"):
            return
        from heinzel.store.lifecycle import Lifecycle

        try:
            Lifecycle(state).fire("wake", str(row["name"]))
        except HeinzelError as refused:
            raise HeinzelError(
                "HZH050", f"{row['name']} is {state}: {what} was not kept", refused.hint
            ) from None

    # -- the verbs -----------------------------------------------------------------

    def chat(
        self, ref: str, message: str, *, request_id: str | None = None, run: bool = True
    ) -> dict[str, Any]:
        """Send ``message``: steer or queue for a running turn, else start an asked turn
        (``run=False``: leave that turn to the caller, who runs ``chat`` again with the
        same request id in another process, as the web head does)."""
        from machines import keys
        from machines.keys import Wake

        if not message.strip():
            raise HeinzelError("HZH235", "the message is empty", "say what you want changed")
        try:
            message.encode("utf-8")
        except UnicodeEncodeError:
            raise HeinzelError(
                "HZH243",
                "the message holds bytes that are not UTF-8 text",
                "send it again from a UTF-8 terminal or file",
            ) from None
        row = self.service.resolve(ref, write=True)
        heinzel = str(row["id"])
        if row["contract_version"] is None:
            # refused before the inbox is written: a refused message is never delivered later
            raise HeinzelError(
                "HZH202",
                f"{row['name']} has no approved contract version to run; the message was not kept",
                f"`hz approve {row['name']}`, then send the message again",
            )
        self._refuse_held(row, "the message")
        request = self._request(heinzel, "chat", message, request_id)
        base = {"name": row["name"], "request_id": request.request_id}
        wake = Wake("asked", keys.asked(heinzel, request.request_id))
        # one delivery per request id: the first claim (a steer, a question's answer, its
        # own turn, a queued follow-up) is where it went; a resend runs nothing more
        claim = claim_of(self.service, heinzel, request.request_id)
        if claim is not None and claim.kind == "steered":  # it went into that turn only
            Inbox(self.service.home, heinzel).take(request.request_id, at=self.service.clock())
            return {**base, **_into(("turn.steered", claim.turn), "before this was sent again")}
        if claim is not None and claim.kind in ("answer", "requested"):
            return {**base, **already(self.service, heinzel, claim)}
        turn = self._running(heinzel)
        earlier = claim.turn if claim is not None else None
        if earlier is not None and (earlier != turn or self._busy(heinzel, turn)):
            # its own turn ran (or runs, or waits): say what the record says; only a turn a
            # killed process left open is resumed, below
            return self._already(heinzel, base, wake.key, earlier, resumed=False)
        asks = open_asks(self.service, heinzel)
        if asks and self.answer is not None and earlier is None and not self._busy(heinzel, turn):
            answered_now = self._answered(heinzel, request, base, asks[0], run=run)
            if answered_now is not None:
                return answered_now
        if self._busy(heinzel, turn):
            return {**base, "turn": turn, "delivered": "queued for the running turn"}
        if turn and earlier is None:
            # a turn a stopped process left open: the tick's recovery resumes it, and its
            # host delivers the message (or, when the turn ends first, runs it after)
            return {**base, "turn": turn, "delivered": QUEUED_OPEN}
        if not run:
            return {**base, "delivered": "a new turn", "key": wake.key, "started": False}
        try:
            states = self.runner.run_wakes(heinzel, [wake], adapters=self.adapters)
        except HzError as error:
            if error.code != "HZL010":
                raise
            # another process held the lock all along: the message waits in the inbox
            taken = self._claim(heinzel, wake.key)
            if taken is None:
                return {**base, "delivered": QUEUED_BUSY}
            return {**base, **_into(taken, "while this waited for the lock")}
        if earlier is not None:
            # the request id was sent before and its turn is on record: say what the record
            # says (a turn a killed process left open is resumed above, not run twice)
            return self._already(heinzel, base, wake.key, earlier, resumed=bool(states))
        taken = self._claim(heinzel, wake.key)
        own = {getattr(state, "turn", None) for state in states}
        if taken is None:  # stopped by a signal before its turn started: the tick runs it
            return {**base, "delivered": QUEUED_STOPPED}
        if taken[1] not in own:
            # another process delivered it while this one waited for the lock
            return {**base, **_into(taken, "while this waited for the lock")}
        ended = _ended(states[-1] if states else None)
        return {**base, "delivered": "a new turn", "key": wake.key, **ended, **self._filed(heinzel)}

    def _claim(
        self, heinzel: str, key: str, kinds: tuple[str, ...] = CLAIM_KINDS
    ) -> tuple[str, str] | None:
        """The spine line that claimed ``key``'s delivery, ``(kind, turn)``, or None: a
        ``turn.steered`` or the ``turn.started`` / ``turn.skipped`` of a turn with the key
        (one message, one turn: docs/turns-in-hz.md, "One message, one turn")."""
        from ledger.spine import read_events

        marks = ", ".join("?" for _ in kinds)
        row = self.service.read_db.execute(
            f"SELECT kind, line_offset FROM keys WHERE heinzel = ? AND key = ? "  # noqa: S608
            f"AND kind IN ({marks}) ORDER BY seq LIMIT 1",
            [heinzel, key, *kinds],
        ).fetchone()
        if row is None:
            return None
        path = self.service.home.spine_path(heinzel)
        for event in read_events(path, from_offset=int(row[1])):
            return str(row[0]), str(event.turn)
        return None

    def _answered(
        self, heinzel: str, request: Request, base: dict[str, Any], asked: Event, *, run: bool
    ) -> dict[str, Any] | None:
        """The message answers the open question (``hz heinzel answer``'s path: the answer
        recorded once, the waiting turn resumed, its follow-up run); the request is taken
        as soon as the answer is in the spine, before the waiting turn resumes, so no
        turn's inbox delivery gets it a second time. ``run=False``: only say so (the web
        head runs this again in a child process). None: another message answered the
        question while this one waited for the lock; it is an ordinary chat."""
        from machines import keys

        question = str(asked.data.get("question") or "")
        said = {**base, "delivered": "answers the open question", "question": question}
        if not run:
            return {**said, "key": f"{heinzel}@answer:{asked.turn}", "started": False}
        assert self.answer is not None
        inbox = Inbox(self.service.home, heinzel)

        def take() -> None:
            inbox.take(request.request_id, at=self.service.clock())

        try:
            done = dict(self.answer(heinzel, request.message, take, request.request_id))
        except HzError as error:
            if error.code == "HZL010" and inbox.answered_chats().get(request.request_id):
                # recorded as the answer, then another process took the lock before its
                # turn went on: delivered; the next tick resumes it with the request
                return {**said, "delivered": ANSWERED_QUEUED}
            if error.code == "HZL010":
                # another process held the lock all along: nothing of the answer is kept
                # (its file is written under the lock); the chat waits in the inbox
                return {**base, "delivered": QUEUED_ANSWER}
            if error.code == "HZH210":
                # while this waited for the lock the request id was delivered: as the
                # answer (a resend of it sent at the same time), or into a turn that took
                # it from the inbox; else another message answered (an ordinary chat)
                claim = claim_of(self.service, heinzel, request.request_id)
                if claim is not None and claim.kind in ("answer", "requested"):
                    return {**base, **already(self.service, heinzel, claim)}
                taken = self._claim(heinzel, keys.asked(heinzel, request.request_id))
                if taken is not None:
                    return {**base, **_into(taken, "while this waited for the lock")}
                return None
            raise
        if done.pop("answered_by", None) is not None:
            # a first answer a killed process left stands: this chat is not it, and waits
            # in the inbox for the next tick, as a chat of its own
            return {**base, "delivered": QUEUED_ANSWERED}
        take()  # an answer owed since a crash: finished above, the request taken now
        done.pop("name", None)
        done.pop("question", None)
        return {**said, **done}

    def _already(
        self, heinzel: str, base: dict[str, Any], key: str, turn: str, *, resumed: bool
    ) -> dict[str, Any]:
        """A request resent with its id: the turn it had, as the record says
        (`heinzel.session.claims.already`), or that it was resumed now."""
        said = {**base, **already(self.service, heinzel, Claim("turn", turn)), "key": key}
        if resumed:
            said["delivered"] = "already delivered (its turn resumed now)"
        return said

    def _filed(self, heinzel: str) -> dict[str, Any]:
        """The amendment the turn filed, when it waits on the user (how to approve it)."""
        pending = self.service.queries.pending_amendment(heinzel)
        if pending is None:
            return {}
        whose = "your request" if pending["by"] == "user" else "its own proposal"
        name = self.service.queries.row(heinzel)["name"]
        return {"amendment": f"v{pending['version']} waits for you ({whose}): hz approve {name}"}

    def resume(self, ref: str) -> dict[str, Any]:
        """Resume the waiting turn now (``woken_by: asked``)."""
        row = self.service.resolve(ref, write=True)
        turn = self._one(
            "SELECT turn FROM waits WHERE heinzel = ? ORDER BY turn DESC LIMIT 1", row["id"]
        )
        if turn is None:
            raise self._nothing_to_resume(row)
        name = str(row["name"])
        asked = [
            q for q in waiting_questions(self.service, str(row["id"]), name) if q["turn"] == turn
        ]
        if asked:
            # a question's wait ends with an answer, not with a resume (it would ask again,
            # or take a proposed write as denied)
            raise HeinzelError(
                "HZH360",
                f"{name}'s turn {turn} waits on your answer to: {asked[0]['text']}",
                f"answer it: {asked[0]['answer']}",
            )
        state = self.runner.resume_turn(row["id"], turn, "asked", adapters=self.adapters)
        return {"name": row["name"], "turn": turn, "woken_by": "asked", **_ended(state)}

    def _nothing_to_resume(self, row: Mapping[str, Any]) -> HeinzelError:
        """HZH236, saying what it waits on when the list shows it `waiting` without a
        waiting turn: a draft or an amendment waits on the user, not on a resume."""
        name = row["name"]
        pending = self.service.queries.row(str(row["id"])).get("pending") or {}
        if isinstance(pending, str):
            pending = json.loads(pending)
        if pending.get("kind") == "draft":
            return HeinzelError(
                "HZH236",
                f"{name} has no waiting turn: it waits on you to approve its draft",
                f"edit it in its document and delete its DRAFT line, or `hz approve {name}` "
                "(`hz drafts` shows where it is)",
            )
        if pending.get("kind") == "amendment":
            return HeinzelError(
                "HZH236",
                f"{name} has no waiting turn: it waits on you to approve or decline an "
                "amendment to its contract",
                f"`hz heinzel show {name}` shows it; then `hz approve {name}` or "
                f"`hz heinzel decline {name}`",
            )
        return HeinzelError(
            "HZH236",
            f"{name} has no waiting turn",
            f"`hz heinzel wake {name}` starts a new one",
        )

    def stop(self, ref: str) -> dict[str, Any]:
        """End the running turn ``abandoned stopped`` (or ask its host to, at its next step)."""
        row = self.service.resolve(ref, write=True)
        heinzel = str(row["id"])
        turn = self._running(heinzel)
        if turn is None:
            raise HeinzelError(
                "HZH237",
                f"{row['name']} has no running turn",
                f"`hz heinzel show {row['name']}` shows its turns",
            )
        if self._elsewhere(heinzel):
            request = self._request(heinzel, "stop", turn, None)
            return {
                "name": row["name"],
                "turn": turn,
                "stop": "requested: it ends at its next step",
                "request_id": request.request_id,
            }
        abandon_turn(self.service, heinzel, turn, "stopped")  # queued chats wait for the tick
        return {"name": row["name"], "turn": turn, "stop": "abandoned stopped"}

    def retry(self, ref: str, hint: str = "", *, request_id: str | None = None) -> dict[str, Any]:
        """Fork the last ended turn after its gather, with the user's hint."""
        from machines import keys
        from machines.keys import Wake

        row = self.service.resolve(ref, write=True)
        heinzel = str(row["id"])
        self._refuse_held(row, "the retry")
        parent = self._one(
            "SELECT id FROM turns WHERE heinzel = ? AND state IN ('finished', 'skipped') "
            "ORDER BY started_at DESC, start_seq DESC LIMIT 1",
            heinzel,
        )
        if parent is None:
            raise HeinzelError(
                "HZH238",
                f"{row['name']} has no ended turn to retry",
                f"`hz heinzel wake {row['name']}` starts a new one",
            )
        request = self._request(heinzel, "retry", hint, request_id)
        base = {"name": row["name"], "request_id": request.request_id}
        earlier = self._retried(heinzel, request.request_id)
        if earlier is not None:  # once per request id: a resend runs nothing more
            turn, key = earlier
            if turn != self._running(heinzel) or self._elsewhere(heinzel):
                return self._already(heinzel, base, key, turn, resumed=False)
            # its turn a killed process left open: resumed here (the key rule), as a
            # resent chat's is, not left for the next tick
            try:
                states = self.runner.run_wakes(
                    heinzel, [Wake("retry", key)], adapters=self.adapters
                )
            except HzError as error:
                if error.code != "HZL010":
                    raise
                states = []  # another process took the lock first: it runs the turn on
            return self._already(heinzel, base, key, turn, resumed=bool(states))
        wake = Wake("retry", keys.retry(heinzel, request.request_id))
        # the key names no parent: the host forks the one given (`heinzel.turns.fork`)
        states = self.runner.run_wakes(
            heinzel, [wake], adapters=self.adapters, data={"parent_turn": parent}
        )
        ended = _ended(states[-1] if states else None)
        return {**base, "parent": parent, "key": wake.key, **ended}

    def resent_retry(self, ref: str, request_id: str) -> tuple[dict[str, Any] | None, bool]:
        """A retry of ``request_id`` sent before, for a surface that runs the retry in
        another process (the page's child): where it went (None: not delivered, a new
        retry) and whether its turn is one a killed process left open (`retry` resumes
        it, unless it is paused or retired, which `retry` refuses)."""
        row = self.service.resolve(ref, write=True)
        heinzel = str(row["id"])
        Inbox(self.service.home, heinzel).path(request_id)  # HZH231: not a request id
        earlier = self._retried(heinzel, request_id)
        if earlier is None:
            return None, False
        turn, key = earlier
        base = {"name": row["name"], "request_id": request_id}
        said = self._already(heinzel, base, key, turn, resumed=False)
        held = str(row["state"]) in ("paused", "retired")
        left = turn == self._running(heinzel) and not self._elsewhere(heinzel) and not held
        return said, left

    def _retried(self, heinzel: str, request_id: str) -> tuple[str, str] | None:
        """The retry turn of ``request_id`` and its key, when one is on record: keyed
        ``<id>@retry:<request id>``, or of the old form ``<id>@retry:<parent>:<request id>``
        (read alike, `machines.keys.retry_request`)."""
        from machines.keys import retry_request

        rows = self.service.read_db.execute(
            "SELECT id, key FROM turns WHERE heinzel = ? AND key GLOB ? ORDER BY start_seq",
            [heinzel, f"{heinzel}@retry:*"],
        ).fetchall()
        for turn, key in rows:
            if retry_request(str(key)) == request_id:
                return str(turn), str(key)
        return None


def _ended(state: object | None) -> dict[str, Any]:
    """How a turn this command ran ended (its state, disposition and codes)."""
    if state is None:
        return {}
    fields = ("turn", "state", "disposition", "reason", "error")
    return {f: getattr(state, f) for f in fields if getattr(state, f, None) is not None}
