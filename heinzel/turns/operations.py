"""`Turns`: the turn operations a user or the tick asks for, over one home's `Sessions`.

`run_wakes` and `resume_turn` are what the tick calls (`heinzel.tick.TurnRunner`); `wake`
is ``hz heinzel wake``; `create_from_sentence` is ``hz heinzel new "a sentence"``; `answer`
is ``hz heinzel answer``. Each runs in this process with the session's lock held
(docs/turns-in-hz.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from heinzel.session.sessions import Sessions
    from heinzel.store.sources import TickFetch
    from machines import TurnState, Wake

# The turn host, the engine and pydantic-ai load only when a turn runs, so that
# `hz --help`, `hz heinzel list` and the other index-only commands start fast.

__all__ = ["Turns"]


class Turns:
    """Running a Heinzelmännchen's turns, over one home's spines and index."""

    def __init__(self, sessions: Sessions) -> None:
        self.sessions = sessions

    def _adapters(self, adapters: Mapping[str, object] | None) -> Mapping[str, object]:
        """``adapters``, or the configured ones, kept out of hz's own places."""
        if adapters is not None:
            return adapters
        from heinzel.turns.host import default_adapters

        return default_adapters(self.sessions.settings, protected=self.sessions.protected)

    def run_wakes(
        self,
        heinzel_id: str,
        wakes: Sequence[Wake],
        *,
        adapters: Mapping[str, object],
        staged: TickFetch | None = None,
        data: Mapping[str, Any] | None = None,
    ) -> list[TurnState]:
        """Apply the key rule to ``wakes`` and run the turns due (inputs staged first;
        ``data``: more fields for ``turn.started``, a team turn's fencing token)."""
        from heinzel.turns.host import TurnHost

        return TurnHost(self.sessions).run_wakes(
            heinzel_id, wakes, adapters=adapters, staged=staged, data=data
        )

    def resume_turn(
        self, heinzel_id: str, turn: str, woken_by: str, *, adapters: Mapping[str, object]
    ) -> TurnState | None:
        """Resume ``turn`` (``recovery`` after a crash, or what ended its wait)."""
        from heinzel.turns.host import TurnHost

        return TurnHost(self.sessions).resume_turn(heinzel_id, turn, woken_by, adapters=adapters)

    def create_from_sentence(
        self, sentence: str, *, namespace: str | None = None, name: str | None = None
    ) -> dict[str, Any]:
        """A new Heinzelmännchen whose contract a created turn writes (state: proposed),
        named ``name`` when given (checked before the model runs)."""
        from heinzel.turns.created import run_created

        return run_created(self.sessions, sentence, namespace=namespace or "me", name=name)

    def wake(
        self,
        ref: str,
        message: str | None = None,
        *,
        adapters: Mapping[str, object] | None = None,
        request_id: str | None = None,
    ) -> dict[str, Any]:
        """A turn of cause asked now, in this process; what happened (HZH050 when its
        state does not wake: proposed, paused, retired, or a turn already running).
        ``request_id``: the caller's id for this wake; sent again, it says where the first
        went and runs nothing (`heinzel.session.claims`), but resumes the turn a killed
        process left open."""
        from heinzel.store.lifecycle import Lifecycle
        from heinzel.turns.host import TurnHost

        service = self.sessions
        row = service.resolve(ref, write=True)
        resent = self._resent(row, request_id)
        if resent is not None:
            if not self._left_open(row, resent):
                return resent
            assert request_id is not None
            return self._resume_left_open(row, request_id, resent, adapters)
        Lifecycle(str(row["state"])).fire("wake", row["name"])
        chosen = self._adapters(adapters)
        done = TurnHost(self.sessions).wake(
            row["id"], message, adapters=chosen, request_id=request_id
        )
        placed = [d for d in service.queries.drafts() if d["heinzel"] == row["id"]]
        if done.get("disposition") == "drafted" and placed:
            done["draft"] = str(placed[-1]["asset"])
        return {"name": row["name"], **done}

    def resent_wake(self, ref: str, request_id: str) -> tuple[dict[str, Any] | None, bool]:
        """A wake of ``request_id`` sent before, for a surface that runs the wake in
        another process (the page's child): where it went (None: not delivered, a new
        wake) and whether its turn is one a killed process left open (`wake` resumes it)."""
        row = self.sessions.resolve(ref, write=True)
        resent = self._resent(row, request_id)
        return resent, resent is not None and self._left_open(row, resent)

    def _resume_left_open(
        self,
        row: Mapping[str, Any],
        request_id: str,
        resent: Mapping[str, Any],
        adapters: Mapping[str, object] | None,
    ) -> dict[str, Any]:
        """A resent wake whose turn a killed process left open: resumed here by its key (the
        key rule), once, as a resent chat's is (`heinzel.tick.verbs.Verbs.chat`); its inbox
        record is left as the first send wrote it. Another process that took the lock first
        and ran the turn on: what the record says now."""
        from heinzel.turns.host import TurnHost, summary
        from ledger.errors import HzError
        from machines import keys
        from machines.keys import Wake

        heinzel = str(row["id"])
        wake = Wake("asked", keys.asked(heinzel, request_id))
        try:
            states = TurnHost(self.sessions).run_wakes(
                heinzel, [wake], adapters=self._adapters(adapters)
            )
        except HzError as error:
            if error.code != "HZL010":
                raise
            states = []
        own = [state for state in states if wake.key in state.keys]
        if not own:
            return self._resent(row, request_id) or dict(resent)
        done = summary(own, self.sessions.home.session_dir(heinzel))
        return {**resent, **done, "delivered": "already delivered (its turn resumed now)"}

    def _owed_follow_up(
        self,
        row: Mapping[str, Any],
        resent: dict[str, Any],
        adapters: Mapping[str, object] | None,
    ) -> dict[str, Any]:
        """A resent answer: where it went, and the follow-up it owes run now when a killed
        process recorded it and died before that turn started (as the next answer of any
        text finishes it, `heinzel.turns.answer_text`), unless another process holds the
        spine's lock (it, or the next tick, runs it)."""
        from heinzel.session.open_turns import lock_held
        from heinzel.session.questions import unfinished_answers
        from heinzel.turns.answer_text import follow_up
        from heinzel.turns.host import TurnHost
        from ledger.errors import HzError

        heinzel = str(row["id"])
        asking = resent.get("turn")
        owed = {str(event.turn) for event in unfinished_answers(self.sessions, heinzel)}
        if asking not in owed or lock_held(self.sessions.home.session_dir(heinzel) / "lock"):
            return resent
        try:
            chosen = self._adapters(adapters)
            done = follow_up(TurnHost(self.sessions), heinzel, str(asking), chosen)
        except HzError as error:
            if error.code != "HZL010":
                raise
            return resent  # another process took the lock first: it runs the follow-up
        return {**resent, **done, "delivered": f"{resent['delivered']} (its follow-up resumed now)"}

    def _left_open(self, row: Mapping[str, Any], resent: Mapping[str, Any]) -> bool:
        """Whether a resend's turn is one a killed process left open: recorded running,
        its Heinzelmännchen neither paused nor retired, and no process holds its spine's
        lock (so none runs it; the tick would resume it later)."""
        from heinzel.session.open_turns import lock_held

        if resent.get("state") != "running" or str(row["state"]) in ("paused", "retired"):
            return False
        return not lock_held(self.sessions.home.session_dir(str(row["id"])) / "lock")

    def _resent(self, row: Mapping[str, Any], request_id: str | None) -> dict[str, Any] | None:
        """A request id already delivered (`heinzel.session.claims`): where it went, for
        the resend's answer (exit 0, nothing run); None for a new one (HZH231 for an id
        that is not one)."""
        if request_id is None:
            return None
        from heinzel.session.claims import already, claim_of
        from heinzel.store.inbox import Inbox

        heinzel = str(row["id"])
        Inbox(self.sessions.home, heinzel).path(request_id)  # HZH231: not a request id
        claim = claim_of(self.sessions, heinzel, request_id)
        if claim is None:
            return None
        return {
            "name": row["name"],
            "request_id": request_id,
            **already(self.sessions, heinzel, claim),
        }

    def answer(
        self,
        ref: str,
        approved: bool,
        proposal: str | None = None,
        *,
        adapters: Mapping[str, object] | None = None,
        resume: bool = True,
    ) -> dict[str, Any]:
        """Answer a chat turn's proposed write (``hz heinzel answer``) and resume its turn:
        an approved write happens once; a denied one is told to the model (HZH210-212).
        ``resume=False`` only records the answer (the web head resumes in a child)."""
        from heinzel.turns.answer import answer
        from heinzel.turns.host import TurnHost

        service = self.sessions
        row = service.resolve(ref, write=True)
        chosen = self._adapters(adapters)
        return answer(
            TurnHost(service), row["id"], approved, proposal, adapters=chosen, resume=resume
        )

    def respond(
        self,
        ref: str,
        said: str,
        proposal: str | None = None,
        *,
        question: str | None = None,
        adapters: Mapping[str, object] | None = None,
        request_id: str | None = None,
        run: bool = True,
    ) -> dict[str, Any]:
        """``hz heinzel answer NAME SAID``: yes|no to an open proposed write (`answer`),
        else ``said`` as the free-text answer to an outcome's question (HZH295, HZH296);
        ``question`` (a turn id) picks one of several open questions (HZH350).
        ``request_id``: the caller's id for an answer in words, kept with it; sent again,
        it says which question it answered and runs nothing. ``run=False`` (with
        ``question``): the answer only recorded, for `answer_text`'s follow-up elsewhere."""
        from heinzel.errors import HeinzelError
        from heinzel.session.questions import open_questions

        service = self.sessions
        row = service.resolve(ref, write=True)
        resent = self._resent(row, request_id)
        if resent is not None:
            return self._owed_follow_up(row, resent, adapters)
        waiting = open_questions(service, row["id"])
        if question is not None:
            return self.answer_text(
                row["id"],
                said,
                adapters=adapters,
                question=question,
                request_id=request_id,
                run=run,
            )
        if proposal is not None or waiting:
            # with nothing proposed, `answer` says so (HZH210), whatever was said
            if waiting and said not in ("yes", "no"):
                raise HeinzelError(
                    "HZH296",
                    f"{row['name']} waits on a proposed write: the answer is yes or no",
                    f"hz heinzel answer {row['name']} yes (or no)",
                )
            return self.answer(ref, said == "yes", proposal, adapters=adapters)
        return self.answer_text(row["id"], said, adapters=adapters, request_id=request_id)

    def answer_text(
        self,
        ref: str,
        text: str,
        *,
        adapters: Mapping[str, object] | None = None,
        recorded: Callable[[], None] | None = None,
        request_id: str | None = None,
        question: str | None = None,
        run: bool = True,
    ) -> dict[str, Any]:
        """``text`` as the free-text answer to the oldest open question, or to
        ``question`` (its turn id or key) (``hz heinzel answer``, and a chat while a
        question is open): recorded once, the waiting turn resumed, its follow-up turn
        run (`heinzel.turns.answer_text`; ``run=False``: only recorded)."""
        from heinzel.turns.answer_text import answer_text
        from heinzel.turns.host import TurnHost

        service = self.sessions
        row = service.resolve(ref, write=True)
        chosen = self._adapters(adapters)
        host = TurnHost(service)
        return {
            **answer_text(
                host,
                row["id"],
                text,
                adapters=chosen,
                recorded=recorded,
                request_id=request_id,
                question=question,
                run=run,
            )
        }
