"""The host: runs a Heinzelmännchen's turns on the machine, in-process, its lock held.

`TurnHost` is what `heinzel.turns.Turns.run_wakes`, `resume_turn` and `wake` call. For
each run it stages the contract's inputs in the source cache (before any
``turn.started``), opens the session's spine with the crash hook installed, builds
the journal (`IndexedJournal`), the body (`SessionBody`) and the steps
(`HeinzelSteps`, wrapped so the inbox is delivered at each step boundary:
`heinzel.turns.delivery`), and lets `machines.Session` apply the key rule. When the turn
ends it runs one follow-up turn with every requested cause, and so on until none is left.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine, Mapping, Sequence
from contextlib import AbstractContextManager
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from time import sleep
from typing import TYPE_CHECKING, Any

from heinzel.contract import CompiledContract
from heinzel.contract.source import split
from heinzel.engine.context import ContextSettings
from heinzel.engine.money import Price, Pricing
from heinzel.engine.spec import InputSpec, Skill, SpineView
from heinzel.errors import HeinzelError
from heinzel.ids import new_id
from heinzel.index.flow import fallbacks, pending_draft, upstream_inputs
from heinzel.index.seen import record_seen
from heinzel.session.amendments import propose_amendment
from heinzel.session.open_turns import lock_held
from heinzel.session.spend import hold_day, spent_today
from heinzel.store.contracts import approved_text
from heinzel.store.inbox import Inbox, apply_edits
from heinzel.store.sources import SourceCache, TickFetch
from heinzel.turns.approval import approval_inputs, nothing_to_learn
from heinzel.turns.chat import ChatReads, ChatWrites
from heinzel.turns.delivery import DeliveringSteps, Delivery, batches, undelivered
from heinzel.turns.failure import ENDED_BADLY, cause_of, keep_failure
from heinzel.turns.fork import fork_data, parent_inputs, retry_parent
from heinzel.turns.handoff import BoundHandoff, bind_runner
from heinzel.turns.inputs import (
    INBOX_CAUSES,
    asked_inputs,
    default_adapters,
    input_requests,
    last_approved,
    recent_bodies,
    refuse_unfetched,
    search_capabilities,
    stage,
)
from heinzel.turns.interrupt import interruptible
from heinzel.turns.pins import pinned_fingerprint, pinned_lessons, turn_skills
from heinzel.turns.record import IndexedJournal, SessionBody, write_lazily
from heinzel.turns.steps import HeinzelSteps, TurnEnv
from heinzel.turns.view import spine_view
from ledger.bodies import Bodies
from ledger.files import ensure_private_dir, write_atomic
from ledger.spine import Spine, read_events
from machines import (
    Journal,
    Pins,
    Session,
    TurnState,
    Wake,
    body_crash_hook,
    body_sync_crash_hook,
    coalesce,
    crash_hook,
    keys,
    run_sync,
    skip_turn,
)
from machines import Settings as MachineSettings
from machines.stores.journal import expand_steps

if TYPE_CHECKING:
    from pydantic_ai.models import Model

    from heinzel.runners.base import AgentRunner
    from heinzel.session.sessions import Sessions

__all__ = ["TurnHost", "default_adapters", "summary"]


@lru_cache(maxsize=64)
def _body(text: str) -> str:
    """A version's Markdown body, split once per process."""
    return split(text, source="contract").body


async def _no_sleep(_seconds: float) -> None:
    """Effects retry at once inside a CLI turn (tenacity's sleep, injected)."""


class TurnHost:
    """Turns of the Heinzelmännchen of one home (its `Sessions`)."""

    def __init__(
        self,
        service: Sessions,
        *,
        model: Model | None = None,
        runner: tuple[str, AgentRunner] | None = None,
    ) -> None:
        """``model`` and ``runner`` replace the configured ones (tests, embeddings)."""
        self.service = service
        self.model = model
        self.runner = runner
        self.interrupted: str | None = None
        """The signal (SIGINT, SIGTERM) that stopped a turn of this host; no follow-ups then."""

    # -- what a turn reads ---------------------------------------------------------

    def _contract(
        self, heinzel_id: str, version: int, fingerprint: str
    ) -> tuple[CompiledContract, str]:
        """The approved version and its text, refused when its file changed (`approved_text`)."""
        return approved_text(self.service.home, heinzel_id, version, fingerprint)

    def _origin(self, heinzel_id: str) -> Path:
        for event in read_events(self.service.home.spine_path(heinzel_id)):
            if event.kind == "heinzel.created":
                return Path(str(event.data.get("origin") or "."))
        return Path()

    def _view(self, heinzel_id: str, spine: Spine) -> SpineView:
        """The past the turn sees, from the index and the spine's tail (`spine_view`)."""
        keep = self.service.settings.heinzel.summary_keep_turns
        return spine_view(self.service.index.db, heinzel_id, spine.path, keep)

    def _parent_inputs(self, heinzel_id: str, parent: str) -> list[dict[str, Any]] | None:
        home = self.service.home
        return parent_inputs(home.spine_path(heinzel_id), home.session_dir(heinzel_id), parent)

    def _spent_today(self, heinzel_id: str) -> Decimal:
        """Today's spend across the home, other Heinzelmännchen's open turns included
        (`heinzel.session.spend`); this one's resumed turn counts its own spend."""
        service = self.service
        found = spent_today(service.index, service.home, service.clock(), mine={heinzel_id})
        return Decimal(str(found))

    def _hold_day(self) -> AbstractContextManager[Decimal]:
        """The home's spend lock with the day's spend, for one reservation."""
        service = self.service
        timeout = service.settings.heinzel.lock_timeout.total_seconds()
        return hold_day(service.index, service.home, service.clock, timeout=timeout, sleep=sleep)

    def _env(
        self,
        heinzel_id: str,
        spine: Spine,
        cause: str,
        adapters: Mapping[str, object],
        *,
        extra: Sequence[InputSpec],
        slot: str,
        approval: Mapping[str, Any] | None = None,
        pins: Mapping[str, Any] | None = None,
        reused: Sequence[Mapping[str, Any]] | None = None,
        past_think: bool = False,
    ) -> TurnEnv:
        """What the turn reads; ``pins`` (a resumed turn's ``turn.started`` pins) fix the
        contract version, the skills and the lessons it saw, whatever changed since. The
        model is made here (a missing key refuses the turn before it starts or resumes),
        but for a resumed turn ``past_think``, which never calls one: it loads no model."""
        service = self.service
        row = service.queries.row(heinzel_id)
        if row["contract_version"] is None:
            raise HeinzelError(
                "HZH202",
                f"{row['name']} has no approved contract version to run",
                f"approve it first: `hz approve {row['name']}`",
            )
        version, fingerprint = int(row["contract_version"]), str(row["fingerprint"])
        pinned = (pins or {}).get("contract_version")
        if pinned is not None and int(pinned) != version:
            version, fingerprint = int(pinned), pinned_fingerprint(spine, int(pinned))
        contract, text = self._contract(heinzel_id, version, fingerprint)
        origin = self._origin(heinzel_id)
        config = service.settings.heinzel
        model_class = contract.hz.agent.model_class
        model = None if past_think else self._model(cause, model_class)

        def make_model() -> Model:
            return model if model is not None else self._model(cause, model_class)

        bound = self.runner or bind_runner(service.settings.runners)
        directory = service.home.session_dir(heinzel_id)
        crash = body_crash_hook(power_cut=spine.simulate_power_cut)
        crash_sync = body_sync_crash_hook(power_cut=spine.simulate_power_cut)
        bodies = Bodies(directory, defer_fsync=True, on_write=crash, on_sync=crash_sync)
        durable = write_lazily(spine, bodies)  # docs/spine.md, "One fsync per step"
        view = self._view(heinzel_id, spine)

        def handoff(turn: str, journal: Journal) -> BoundHandoff | None:
            if bound is None:
                return None
            timeout = contract.hz.timeout.total_seconds()
            return BoundHandoff(
                bound[0], bound[1], timeout_s=timeout, journal=journal, bodies=bodies, turn=turn
            )

        lessons = pinned_lessons(service.queries.lessons(heinzel_id), pins)
        skills = turn_skills(contract, config.skills, pins)
        return TurnEnv(
            heinzel_id=heinzel_id,
            name=row["name"],
            version=version,
            contract=contract,
            contract_body=_body(text),
            contract_text=text,
            origin=origin,
            requests=[]
            if approval or reused is not None
            else input_requests(heinzel_id, contract, origin),
            pending_draft=lambda output: pending_draft(service.index.db, heinzel_id, output),
            upstream=upstream_inputs(service.index.db, heinzel_id),
            fallbacks=[]
            if approval or reused is not None or past_think
            else fallbacks(service.index.db, heinzel_id, service.clock()),
            reused=reused,
            cache=SourceCache.of(service.home),
            restage=lambda gone: stage(
                gone,
                adapters,  # type: ignore[arg-type]
                service.clock(),
                SourceCache.of(service.home),
            ),
            body=SessionBody(bodies),
            sync=durable,
            make_model=make_model,
            clock=service.clock,
            pricing=Pricing(
                at=service.clock(),
                overrides={
                    name: Price(Decimal(str(p.input)), Decimal(str(p.output)))
                    for name, p in config.prices.items()
                },
            ),
            settings_max_usd=Decimal(str(config.max_usd)),
            day_usd=Decimal(str(config.max_usd_per_day)),
            spent_today=self._spent_today(heinzel_id),
            hold_day=self._hold_day,
            context_settings=ContextSettings(
                summary_after_turns=config.summary_after_turns,
                summary_keep_turns=config.summary_keep_turns,
            ),
            view=view,
            read_recent=lambda: recent_bodies(bodies, view, config.summary_keep_turns),
            lessons=lessons,
            skills=[Skill(one.name, one.text, one.fingerprint) for one in skills],
            runner=handoff if bound is not None else None,
            extra_inputs=tuple(extra),
            slot=slot,
            approval=approval,
            inbox=service.home.inbox_dir(heinzel_id),
            capabilities=search_capabilities(contract, adapters, service.clock()),
            last_approved=last_approved(
                service.index.db,
                heinzel_id,
                adapters.get("documents"),
                service.home.session_dir(heinzel_id),
            ),
            documents=adapters.get("documents"),
            propose=lambda text, why, asked: propose_amendment(
                service, heinzel_id, text, by="heinzel", source="turn", reason=why, asked=asked
            ),
            writes=ChatWrites(
                heinzel_id,
                row["name"],
                lambda: str(service.queries.row(heinzel_id)["state"]),
                service.home.inbox_dir(heinzel_id),
            )
            if cause == "asked"
            else None,
            reads=self._reads() if cause == "asked" else None,
        )

    def _reads(self) -> ChatReads:
        """hz's read operations for a chat turn's tools: the index's listing, one in detail
        (with its latest summary) and the drafts waiting on the user."""
        service = self.service

        def show(name: str) -> dict[str, Any]:
            from heinzel.session.summaries import latest_summary

            row = service.resolve(name)
            shown = service.queries.show(str(row["id"]))
            path = service.home.spine_path(str(row["id"]))
            shown["summary"] = latest_summary(service.read_db, path, str(row["id"]))
            return shown

        def listing() -> list[dict[str, Any]]:  # `queries` is asked each time: its connection
            return service.queries.listing()  # is the writer's once the index is open

        def drafts() -> list[dict[str, Any]]:
            return service.queries.drafts()

        return ChatReads(listing=listing, show=show, drafts=drafts)

    def _model(self, cause: str, model_class: str) -> Model:
        """The model a turn of ``cause`` runs with, made when its think step first calls
        one: pydantic-ai and the provider load there (a resumed act loads neither)."""
        if self.model is not None:
            return self.model
        from machines.loading import loading

        with loading():
            from heinzel.turns.models import turn_model

            return turn_model(self.service, cause, model_class)  # type: ignore[arg-type]

    def _machine_settings(self, env: TurnEnv) -> MachineSettings:
        """The machine's limits: ``[heinzel]`` resumes and wait, the contract's timeout."""
        config = self.service.settings.heinzel
        return MachineSettings(
            clock=self.service.clock,
            sleep=_no_sleep,
            max_resumes=config.max_resumes,
            timeout=env.contract.hz.timeout,
            max_wait=config.max_wait,
        )

    # -- running -------------------------------------------------------------------

    def run_wakes(
        self,
        heinzel_id: str,
        wakes: Sequence[Wake],
        *,
        adapters: Mapping[str, object],
        staged: TickFetch | None = None,
        extra: Sequence[InputSpec] = (),
        data: Mapping[str, Any] | None = None,
    ) -> list[TurnState]:
        """Stage the inputs, then apply the key rule to ``wakes`` and run what is due
        (``data``: more fields for the new turn's ``turn.started``)."""
        service = self.service
        if not wakes:
            return []
        row = service.queries.row(heinzel_id)
        version = row["contract_version"]
        requests = []
        contract = None
        if version is not None:
            contract, _ = self._contract(heinzel_id, int(version), str(row["fingerprint"]))
            requests = input_requests(heinzel_id, contract, self._origin(heinzel_id))
        approval = None
        own_extra = not extra

        def asked_extra(wakes: Sequence[Wake]) -> Sequence[InputSpec]:
            asked = [w.key for w in wakes if w.cause in INBOX_CAUSES]
            return asked_inputs(service.home, heinzel_id, asked)

        if own_extra:
            extra = asked_extra(wakes)
        if wakes[0].cause == "approval":
            documents = adapters.get("documents")
            found = approval_inputs(service, heinzel_id, wakes[0].key, documents)
            if found is None:
                nothing_to_learn(service, heinzel_id, wakes[0].key, documents)
                return []
            extra, approval = found
            requests = []
        parent = retry_parent(wakes)
        if parent is None and data and data.get("parent_turn"):
            parent = str(data["parent_turn"])  # a retry keyed by its request id alone
        reused = None
        if parent is not None:
            reused = self._parent_inputs(heinzel_id, parent)
            data = {**(data or {}), **fork_data(parent)}
            if reused is not None:
                requests, staged = [], None
        if staged is None and requests:
            staged = stage(requests, adapters, service.clock(), SourceCache.of(service.home))  # type: ignore[arg-type]
        if staged is not None:
            refuse_unfetched(staged, heinzel_id)
        with service.hold_spine(heinzel_id, on_durable=[crash_hook()]) as spine:
            apply_edits(Inbox(service.home, heinzel_id), spine)  # forgets queued
            journal = IndexedJournal(spine, service.index.db, heinzel_id)
            given = wakes
            if len(kept := undelivered(journal, wakes)) < len(wakes):
                if not kept:  # a turn was steered with each chat meanwhile: delivered once
                    return []
                wakes = kept
            resumed, follow = self._resume_first(heinzel_id, spine, journal, wakes, adapters)
            if self.interrupted is not None:
                wakes = []  # stopped while a resumed turn ran: the rest waits for the tick
            elif resumed:
                # what the resumed turns' models received is delivered: no turn of its own
                wakes = undelivered(journal, wakes)
            if own_extra and wakes and wakes is not given:
                extra = asked_extra(wakes)
            turn = "tn-" + new_id(service.clock)[3:]
            if not wakes or (
                contract is not None and self._nothing_moved(contract, wakes, heinzel_id, staged)
            ):
                plan = coalesce(journal, wakes)
                if plan.start:
                    resumed.append(
                        skip_turn(journal, turn=turn, wakes=plan.start, reason="nothing-moved")
                    )
                wakes = []
            if not wakes:
                return self._follow_ups(heinzel_id, resumed, follow, adapters)
            slot = wakes[0].key.split("@", 1)[1]
            env = self._env(
                heinzel_id,
                spine,
                wakes[0].cause,
                adapters,
                extra=extra,
                slot=slot,
                approval=approval,
                reused=reused,
            )
            pins = Pins(
                contract_version=env.version,
                skills={one.name: one.fingerprint for one in env.skills},
                lessons_seq=max((int(one.id) for one in env.lessons), default=None),
            )
            states, more = self._drive(
                env, journal, lambda session: session.wake(wakes, turn=turn, pins=pins, data=data)
            )
            states, follow = resumed + states, follow + more
        if states and staged is not None:
            # what this turn read is what the next tick compares against (statement 4)
            seen = [
                (heinzel_id, s.request.input, s.fingerprint)
                for s in staged.staged
                if s.request.watcher == heinzel_id and s.fingerprint is not None
            ]
            record_seen(service.index.db, seen)
        return self._follow_ups(heinzel_id, states, follow, adapters)

    def _follow_ups(
        self,
        heinzel_id: str,
        states: list[TurnState],
        follow: Sequence[Wake],
        adapters: Mapping[str, object],
    ) -> list[TurnState]:
        """``states`` and the turns the follow-up wakes run, once the lock is let go."""
        if self.interrupted is not None:
            return states  # the follow-ups' requests stay in the inbox for the tick
        for batch in batches(follow):
            states += self.run_wakes(heinzel_id, batch, adapters=adapters)
        return states

    def _resume_first(
        self,
        heinzel_id: str,
        spine: Spine,
        journal: IndexedJournal,
        wakes: Sequence[Wake],
        adapters: Mapping[str, object],
    ) -> tuple[list[TurnState], list[Wake]]:
        """Resume (``recovery``) the open turns of ``wakes``' keys, those a killed process
        left, each on its own before a new turn starts: the resumed turn's delivery may
        steer a chat whose own wake is among ``wakes``, and once its model received it,
        that wake is delivered (`undelivered`) and starts no second run of the chat."""
        states: list[TurnState] = []
        follow: list[Wake] = []
        for turn in coalesce(journal, wakes).resume:
            ran, more = self._resume_held(
                heinzel_id, spine, journal, turn, "recovery", adapters=adapters
            )
            states += ran
            follow += more
        return states, follow

    def _drive(
        self,
        env: TurnEnv,
        journal: IndexedJournal,
        run: Callable[[Session], Coroutine[Any, Any, list[TurnState]]],
    ) -> tuple[list[TurnState], list[Wake]]:
        """Run a session whose steps deliver the inbox; what ran and the follow-up wakes."""
        delivery = Delivery(self.service.home, env.heinzel_id, journal, self.service.clock)
        env.poll = lambda: delivery.poll(steer=True)  # right before a model request
        steps = DeliveringSteps(HeinzelSteps(env), delivery)
        session = Session(journal, env.body, steps, self._machine_settings(env))
        delivery.session = session
        try:
            with interruptible() as interrupt:
                delivery.interrupted = lambda: interrupt.signal
                env.stop_asked = delivery.stop_asked
                env.on_interrupt = interrupt.listen
                states = run_sync(run(session))
            if interrupt.signal is not None:
                self.interrupted = interrupt.signal
            for state in states:
                if state.state in ENDED_BADLY and steps.failure is not None:
                    keep_failure(env.body, state.turn, steps.failure)
        finally:
            journal.write_held()  # an effect's end no line carried (the turn raised)
            env.body.close()  # the turn's open body handles, what is unsynced fsynced
        return states, delivery.follow_ups(states)

    @staticmethod
    def _nothing_moved(
        contract: CompiledContract, wakes: Sequence[Wake], heinzel_id: str, staged: TickFetch | None
    ) -> bool:
        """A schedule wake of an ``if-moved`` contract whose inputs the tick saw unmoved."""
        if contract.hz.render_on_schedule != "if-moved" or staged is None:
            return False
        if any(w.cause != "schedule" for w in wakes):
            return False
        return not staged.moved().get(heinzel_id)

    def resume_turn(
        self, heinzel_id: str, turn: str, woken_by: str, *, adapters: Mapping[str, object]
    ) -> TurnState | None:
        """Resume one turn (after a crash: ``recovery``; after a wait: what woke it)."""
        service = self.service
        with service.hold_spine(heinzel_id, on_durable=[crash_hook()]) as spine:
            apply_edits(Inbox(service.home, heinzel_id), spine)  # forgets queued
            journal = IndexedJournal(spine, service.index.db, heinzel_id)
            states, follow = self._resume_held(
                heinzel_id, spine, journal, turn, woken_by, adapters=adapters
            )
        self.run_wakes(heinzel_id, follow, adapters=adapters)
        return states[0] if states else None

    def _resume_held(
        self,
        heinzel_id: str,
        spine: Spine,
        journal: IndexedJournal,
        turn: str,
        woken_by: str,
        *,
        adapters: Mapping[str, object],
    ) -> tuple[list[TurnState], list[Wake]]:
        """Resume ``turn`` under the spine's lock the caller holds: what ran and the
        follow-up wakes (run by the caller once the lock is let go)."""
        service = self.service
        known = journal.turn_offset(turn) is not None
        events = journal.turn_events(turn) if known else []
        started = next((e for e in events if e.kind == "turn.started"), None)
        if started is None:
            raise HeinzelError(
                "HZH203",
                f"no turn {turn} in this session",
                "`hz heinzel show NAME` lists turns",
            )
        cause = str(started.data.get("cause"))
        key = str(started.key)
        slot = key.split("@", 1)[1]
        causes = started.data.get("causes") or [{"cause": cause, "key": key}]
        asked = [str(c.get("key")) for c in causes if c.get("cause") in INBOX_CAUSES]
        extra = asked_inputs(service.home, heinzel_id, asked)
        approval = None
        if cause == "approval":
            found = approval_inputs(service, heinzel_id, key, adapters.get("documents"))
            extra, approval = found if found else ((), {"key": key})
        env = self._env(
            heinzel_id,
            spine,
            cause,
            adapters,
            extra=extra,
            slot=slot,
            approval=approval,
            pins=started.data.get("pins") or {},  # {}: pinned to nothing (old turns)
            reused=self._parent_inputs(heinzel_id, str(started.data["parent_turn"]))
            if started.data.get("parent_turn")
            else None,
            past_think=any(
                e.kind == "step.started" and e.data.get("step") in ("outcome", "act")
                for e in expand_steps(events)
            ),
        )

        async def resume(session: Session) -> list[TurnState]:
            state = await session.resume(turn, woken_by)
            return [] if state is None else [state]

        return self._drive(env, journal, resume)

    # -- asked turns -----------------------------------------------------------------

    def wake(
        self,
        heinzel_id: str,
        message: str | None,
        *,
        adapters: Mapping[str, object],
        request_id: str | None = None,
    ) -> dict[str, Any]:
        """A turn of cause asked: the message into the inbox first, then the turn. A wake
        with no message writes its request only while another process holds the spine's
        lock (this one then waits for it, and may be killed waiting): with the lock free
        the turn's own ``turn.started`` is the request's first and only record, and
        gather has nothing to read from an empty one (two fsyncs a wake saved).
        ``request_id``: the caller's (checked unclaimed by `Turns.wake`), else a new one."""
        service = self.service
        request = request_id or "rq-" + new_id(service.clock)[3:]
        if message is not None or lock_held(service.home.session_dir(heinzel_id) / "lock"):
            inbox = service.home.inbox_dir(heinzel_id)
            ensure_private_dir(inbox)
            record = {"request": request, "message": message, "at": service.clock().isoformat()}
            write_atomic(inbox / f"{request}.json", json.dumps(record).encode("utf-8"))
        wake = Wake("asked", keys.asked(heinzel_id, request))
        states = self.run_wakes(heinzel_id, [wake], adapters=adapters)
        # how its own turn ended, not a follow-up's run after it (a chat queued meanwhile):
        # a wake whose turn was stopped says so, and exits 1, whatever ran next
        own = [state for state in states if wake.key in state.keys]
        done = summary(own or states, service.home.session_dir(heinzel_id))
        if self.interrupted is not None:
            done["interrupted"] = self.interrupted
        return done


def summary(states: Sequence[TurnState], session_dir: Path) -> dict[str, Any]:
    """How the last of ``states`` ended, with its cause when it failed or was abandoned."""
    if not states:
        return {"turn": None, "state": "nothing to do"}
    state = states[-1]
    return {
        "turn": state.turn,
        "state": state.state,
        "disposition": state.disposition,
        "reason": state.reason,
        "error": state.error,
        "usd": state.spend_usd,
        "cause": cause_of(session_dir, state.turn),
    }
