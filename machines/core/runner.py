"""The driver: start or resume a turn and walk its steps, checkpoint before work.

`start_turn` appends ``turn.started`` and walks gather -> think -> outcome -> act ->
finish. `resume_turn` folds the turn's own events, applies the resume rules
(`machines.core.resume`) and continues from the last checkpoint. The live state is the
fold of what was appended (a `_Tracking` journal applies each event as it is
written), and after every transition the machine's state must equal the fold's:
pi's fixed-point self-check, made permanent.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from ledger.event import Clock, Event, format_ts, parse_ts
from ledger.records import frozen_record
from machines.core.context import TurnContext, current
from machines.core.effects import EffectFailed, EffectRefused, Settled, Sleep
from machines.core.fold import TurnState, apply_event
from machines.core.steps import Acted, Fail, OutOfTime, Skip, Steps, Wait
from machines.core.table import NEXT_TRIGGER, RUNNING
from machines.core.tools import ToolFailed
from machines.core.turn import TurnMachine
from machines.core.values import ValueRefused, acted_data, plain_json
from machines.core.waits import check_wait
from machines.errors import MachineError
from machines.host_vocabulary import HZ, Vocabulary
from machines.stores.journal import Body, Journal, content_ref
from machines.telemetry import logs
from machines.telemetry.observe import Observer, OnCheckpoint, OnError, call_hook, step_id
from machines.vocabulary import MACHINE_KINDS, SKIP_REASONS

NEXT_STEP = {"gather": "think", "think": "outcome", "outcome": "act", "act": "finish"}
"""The step each step hands its result to."""

PREVIOUS_STEP = {after: before for before, after in NEXT_STEP.items()}
"""The step whose result each step takes as its input."""

_STOPS = object()
"""`TurnRun._value` of a result the turn does not continue with."""

_BOUNDED = frozenset(MACHINE_KINDS) | {"turn.waiting", "effect.started", "effect.done"}
"""Checkpoints the machine writes whose data may carry ``ran_ms`` (`TurnRun._bound`);
never a host's own kind (its data is the host's) nor ``turn.finished`` (its
``duration_ms`` says it)."""

_JUMP_MS = 1000
"""How far the wall clock may run ahead of the monotonic one before a checkpoint
records the running time the monotonic clock measured (``ran_ms``)."""


@frozen_record
class Settings:
    """The host's knobs: the injected clock (its wall part ``clock`` and its monotonic
    part ``monotonic``) and sleep, the limits of ADR 0049, the host's vocabulary, and
    what the host observes (`machines.telemetry.observe`)."""

    clock: Clock
    sleep: Sleep
    max_resumes: int = 3
    timeout: timedelta = timedelta(minutes=10)
    max_wait: timedelta = timedelta(days=7)
    vocabulary: Vocabulary = HZ
    """The host's dispositions and causes (`machines.host_vocabulary`); hz's by default."""
    monotonic: Callable[[], float] | None = None
    """Seconds on a clock that only runs while the process does: a turn's running time
    in this process is the wall clock's, never more than this clock measured, so a
    wall clock that jumps forward (a suspended laptop, a clock set right) neither
    counts as running time nor times the turn out. None: the injected clock's own
    ``monotonic`` part when it has one (`machines.crashkit.testing.ManualClock`), else
    ``time.monotonic`` (`monotonic_of`)."""
    on_error: OnError | None = None
    """Called with the exception a step raised and its `machines.telemetry.observe.StepId`."""
    on_checkpoint: OnCheckpoint | None = None
    """Called with every event a running turn journals, once it is durable."""
    observers: tuple[Observer, ...] = ()
    """Told when a turn run and its steps begin and end (`machines.telemetry.otel.Tracing`)."""

    def monotonic_of(self) -> Callable[[], float]:
        """The monotonic part of the injected clock (see ``monotonic``)."""
        if self.monotonic is not None:
            return self.monotonic
        part = getattr(self.clock, "monotonic", None)
        return part if callable(part) else time.monotonic


def _checked(step: str, result: Any, value: Any) -> Any:
    """A step's value as the body will keep it, refused before it is journalled when it
    is not JSON (HZM071) or, act's, when ``turn.finished`` cannot carry its data (HZM073):
    the data exists only once act returns, after its effects (recorded done), so the
    turn then fails with the code, recorded, and is never resumed as if it had crashed."""
    if isinstance(result, Acted):
        return {"disposition": result.disposition, **acted_data(result.data)}
    return plain_json(value, f"the value of {step}")


class _Tracking:
    """A journal wrapper that folds every event it appends into the live state."""

    def __init__(self, journal: Journal, state: TurnState, vocabulary: Vocabulary) -> None:
        self.inner = journal
        self.state = state
        self.vocabulary = vocabulary
        self.after: Callable[[Event], None] | None = None
        """Called after each append with the durable event (`TurnRun._appended`)."""
        self.bound: Callable[[str, str | None], Mapping[str, int]] | None = None
        """Extra data for a checkpoint (`TurnRun._bound`: ``ran_ms`` after a jump)."""

    def append(
        self,
        kind: str,
        data: Mapping[str, Any] | None = None,
        *,
        turn: str | None = None,
        key: str | None = None,
        short_text: Sequence[str] = (),
    ) -> Event:
        extra = self.bound(kind, turn) if self.bound is not None else None
        if extra:
            data = {**(data or {}), **extra}
        event = self.inner.append(kind, data, turn=turn, key=key, short_text=short_text)
        if event.turn == self.state.turn:
            apply_event(self.state, event, self.vocabulary)
        if self.after is not None:
            self.after(event)
        return event

    def turn_events(self, turn: str) -> list[Event]:
        return self.inner.turn_events(turn)

    def key_events(self, key: str) -> list[Event]:
        return self.inner.key_events(key)

    def recorded_done(self, key: str) -> str | None:
        return self.inner.recorded_done(key)


def _no_disposition(result: Any, vocabulary: Vocabulary) -> MachineError:
    """HZM014 for what act returned instead of an `Acted` with a known disposition."""
    if isinstance(result, Acted):
        got = f"Acted({result.disposition!r}), not a disposition of {vocabulary.name!r}"
    else:
        got = f"{type(result).__name__}, not an Acted"
    return MachineError(
        "HZM014",
        f"act returned {got}",
        f"return Acted(disposition) with one of {', '.join(vocabulary.dispositions)}",
    )


def _body_gone(turn: str, step: str) -> MachineError:
    return MachineError(
        "HZM013",
        f"turn {turn} cannot continue {step}: the body no longer holds its input",
        "the turn body expired or was deleted; fork a new turn (machines.retry_fork)",
    )


class TurnRun:
    """One process's hold on one turn: its machine, live state and running context."""

    def __init__(
        self,
        journal: Journal,
        body: Body | None,
        steps: Steps | None,
        settings: Settings,
        state: TurnState,
    ) -> None:
        self.state = state
        self.journal = _Tracking(journal, state, settings.vocabulary)
        self.body = body
        self.steps = steps
        self.settings = settings
        self.machine = TurnMachine(
            self.journal, state.turn, state=state.state, waiting_step=state.waiting_step
        )
        self.context: TurnContext | None = None
        self.ending: tuple[str, str | None] | None = None
        """Set by the resume rules: end the turn this way (after settling its effects)."""
        self._held: tuple[float, int] | None = None
        """The monotonic clock and the running time when this process began driving."""
        self._monotonic = settings.monotonic_of()
        self.journal.after = self._appended
        self.journal.bound = self._bound

    def _bound(self, kind: str, turn: str | None) -> Mapping[str, int]:
        """``{"ran_ms": n}`` for a checkpoint of this turn when, since the last one, the
        wall clock ran more than a second ahead of the monotonic clock (it jumped):
        the fold, and so a recovery after a crash, then counts ``n``, not the jump.
        Nothing in the usual case, so a line is no longer for it."""
        state = self.state
        if self._held is None or turn != self.turn or kind not in _BOUNDED:
            return {}
        if state.running_since is None:
            return {}
        since = self.settings.clock() - parse_ts(state.running_since)
        wall = state.running_ms + max(0, int(since.total_seconds() * 1000))
        ran = self._ran_ms()
        return {"ran_ms": ran} if wall - ran > _JUMP_MS else {}

    def _appended(self, event: Event) -> None:
        """After each durable append: the live running time on the monotonic bound,
        then the host's ``on_checkpoint``."""
        if self._held is not None and event.turn == self.turn:
            self.state.running_ms = min(self.state.running_ms, self._ran_ms())
        if self.settings.on_checkpoint is not None:
            call_hook("on_checkpoint", self.settings.on_checkpoint, event)

    def _ran_ms(self) -> int:
        """The running time by the monotonic clock since this process began driving."""
        assert self._held is not None
        since, base = self._held
        return base + max(0, int((self._monotonic() - since) * 1000))

    def running_ms(self) -> int:
        """The turn's running time now: by the injected wall clock (waiting and
        downtime never count), and, once this process drives it, never more than the
        monotonic clock measured since it began (`TurnState.ran`: a wall clock jump
        does not count, for the steps' own reads of ``ctx.state`` too)."""
        return self.state.running_ms_at(self.settings.clock())

    @property
    def turn(self) -> str:
        """The turn id."""
        return self.state.turn

    def fire(
        self,
        trigger: str,
        data: Mapping[str, Any],
        *,
        key: str | None = None,
        short_text: tuple[str, ...] = (),
    ) -> Event:
        """Take a transition and check the live state against the fold."""
        event = self.machine.fire(trigger, data, key=key, short_text=short_text)
        if self.machine.state != self.state.state:
            raise MachineError(
                "HZM012",
                f"turn {self.turn}: the machine is in {self.machine.state!r} but its "
                f"events fold to {self.state.state!r}",
                "this is a bug in machines; report it with the turn's events",
            )
        return event

    def _finished_data(self, disposition: str, **extra: Any) -> dict[str, Any]:
        """The end line's data: its cause and keys are the turn's ``turn.started``'s."""
        data = {
            "disposition": disposition,
            "usd": self.state.spend_usd,
            "duration_ms": self.running_ms(),
            **{k: v for k, v in extra.items() if v is not None},
        }
        requests = self.state.model_requests
        tokens = sum(int(r.get("tokens") or 0) for r in requests)
        cached = sum(int(r.get("cached") or 0) for r in requests)
        if tokens:  # a turn whose model counted tokens says how many (readers default 0)
            data["tokens"] = tokens
        if cached:
            data["tokens_cached"] = cached
        return data

    def abandon(self, reason: str, *, error: str | None = None) -> Event:
        """End the turn abandoned with ``reason`` (and the step it was in)."""
        step = self.state.waiting_step if self.state.state == "waiting" else self.state.state
        data = self._finished_data("abandoned", reason=reason, step=step, error=error)
        return self.fire("abandon", data)

    def unsettled(self) -> bool:
        """True when an effect was started without an outcome, or done without its
        own event: abandoning now would leave the world ahead of the journal."""
        return any(
            r.outcome is None or (r.outcome == "done" and not r.event_seen)
            for r in self.state.effects.values()
        )

    async def end(self, reason: str, *, error: str | None = None) -> TurnState:
        """Abandon the turn with ``reason``; first, in act, its started effects are
        probed and what is found recorded (`machines.core.effects.settle_effect`) by the
        host's act step run in settling mode, which performs nothing."""
        if self.state.state == "act" and self.unsettled() and self.steps and self.body:
            ctx = TurnContext(
                journal=self.journal,
                body=self.body,
                state=self.state,
                step="act",
                sleep=self.settings.sleep,
            )
            ctx.settling = True
            try:
                await self._work("act", ctx)
            except (Exception, asyncio.CancelledError) as caught:
                if not isinstance(caught, Settled):
                    logs.warning("turn.settle_failed", turn=self.turn, error=str(caught))
        self.abandon(reason, error=error)
        return self.state

    def fail(self, error: str) -> Event:
        """End the turn failed in its current step."""
        return self.fire("fail", self._finished_data("failed", step=self.state.state, error=error))

    def over_time(self, *, resuming: bool = False) -> bool:
        """True when the turn's running time passed the timeout. ``resuming``: count
        only up to its last checkpoint (the time since was downtime or waiting)."""
        limit = int(self.settings.timeout.total_seconds() * 1000)
        if resuming:
            return self.state.running_ms > limit
        return self.running_ms() > limit

    def _input(self, step: str) -> Any:
        digest = self.state.inputs.get(step)
        if digest is None:
            return None
        try:
            return self._body().get(self.turn, digest)
        except KeyError:
            raise _body_gone(self.turn, step) from None

    def _has_input(self, step: str) -> bool:
        """Whether the body still holds the input the journal names for ``step``."""
        digest = self.state.inputs.get(step)
        if digest is None:
            return True
        try:
            self._body().get(self.turn, digest)
        except KeyError:
            return False
        return True

    async def _regain(self, step: str) -> bool:
        """Rebuild the input of ``step`` that the body lost by rerunning the step
        before it (and, first, any earlier one whose input is lost too).

        A power cut can take body records written since the last fsync while
        the line naming them survived (docs/spine.md, "One fsync per step"). The
        rerun is what a resume does anyway: a model step continues the body's
        conversation, a replay-safe call reruns, an effect is found by its key.
        ``turn.resumed{regained, input}`` records the new input. False when the
        rerun went another way than continuing (the turn then failed, HZM013).
        """
        before = PREVIOUS_STEP[step]
        if before != "gather" and not self._has_input(before) and not await self._regain(before):
            return False
        context = TurnContext(
            journal=self.journal,
            body=self._body(),
            state=self.state,
            step=before,
            sleep=self.settings.sleep,
        )
        logs.warning("turn.regain", turn=self.turn, step=step, rerun=before)
        result = await self._work(before, context)
        value = self._value(before, result)
        if value is _STOPS:
            self.fail("HZM013")
            return False
        try:
            value = _checked(before, result, value)
        except ValueRefused as refused:
            self.fail(refused.code)
            return False
        digest = content_ref(value)
        self._body().put(self.turn, digest, value)
        self.fire("resume", {"step": self.state.state, "regained": step, "input": digest})
        return True

    def _value(self, step: str, result: Any) -> Any:
        """What a step's result hands to the next step, or `_STOPS` when it does not
        continue (a wait, skip, failure, or an act without a known disposition)."""
        if isinstance(result, (Wait, Skip, Fail)):
            return _STOPS
        if step == "act" and (
            not isinstance(result, Acted)
            or result.disposition not in self.settings.vocabulary.dispositions
        ):
            return _STOPS
        if isinstance(result, Acted):
            data = result.data if isinstance(result.data, Mapping) else {}
            return {"disposition": result.disposition, **data}
        return result

    def _body(self) -> Body:
        if self.body is None:
            raise MachineError("HZM016", "this run has no body", "pass the turn body")
        return self.body

    async def _work(self, step: str, ctx: TurnContext) -> Any:
        """Run the host's step with ``ctx`` as the current context (`machines.api`'s
        decorated tools and effects find it there)."""
        steps = self.steps
        if steps is None:
            raise MachineError("HZM016", "this run has no steps", "pass the host's steps")
        token = current.set(ctx)
        try:
            if step == "gather":
                return await steps.gather(ctx)
            work = {"think": steps.think, "outcome": steps.outcome, "act": steps.act}
            return await work[step](ctx, self._input(step))
        finally:
            current.reset(token)

    def _advance(self, step: str, result: Any) -> None:
        if isinstance(result, Wait):
            until = result.until or format_ts(self.settings.clock() + self.settings.max_wait)
            until = format_ts(parse_ts(until))
            data: dict[str, Any] = {"step": step, "until": until}
            if result.on is not None:
                data["on"] = dict(result.on)
            if result.output is not None:
                data["output"] = result.output
            self.fire("wait", data)
        elif isinstance(result, Skip):
            if result.reason not in SKIP_REASONS:
                self._caught(
                    step,
                    MachineError(
                        "HZM008",
                        f"{step} skipped the turn with {result.reason!r}, not a skip reason",
                        ", ".join(SKIP_REASONS),
                    ),
                )
                self.fail("HZM008")
                return
            spent = self.state.spend_usd
            self.fire(
                "skip",
                {
                    "reason": result.reason,
                    **({"moved": list(result.moved)} if result.moved else {}),
                    **({"usd": spent} if spent else {}),  # a skip after paid requests
                },
            )
        elif isinstance(result, Fail):
            self.fail(result.error)
        else:
            value = self._value(step, result)
            if value is _STOPS:
                self._caught(step, _no_disposition(result, self.settings.vocabulary))
                self.fail("HZM014")
                return
            try:
                value = _checked(step, result, value)
            except ValueRefused as refused:
                logs.warning("step.refused", turn=self.turn, step=step, error=refused.message)
                self._caught(step, refused)  # the host gets the message and the exception
                self.fail(refused.code)
                return
            digest = content_ref(value)
            self._body().put(self.turn, digest, value)
            # act's disposition is turn.finished's, on the next line: not written twice
            self.fire(NEXT_TRIGGER[step], {"step": NEXT_STEP[step], "input": digest})

    def _conclude(self) -> None:
        acted = self._input("finish") or {}
        vocabulary = self.settings.vocabulary
        disposition = str(vocabulary.current(acted.get("disposition", vocabulary.dispositions[0])))
        if self.state.effects and any(r.outcome is None for r in self.state.effects.values()):
            self.fail("HZM015")
            return
        extra = {k: v for k, v in acted.items() if k != "disposition"}
        self.fire("conclude", self._finished_data(disposition, **extra), short_text=("report",))

    def _caught(self, step: str, error: BaseException) -> None:
        """Keep a step's exception on the state and tell the host's ``on_error``."""
        self.state.exception = error
        if self.settings.on_error is not None:
            call_hook("on_error", self.settings.on_error, error, step_id(self.state, step))

    async def _guarded(self, step: str, work: Awaitable[Any]) -> tuple[bool, Any]:
        """Await a step's work; ``(False, None)`` when it ended the turn (stopped,
        failed) instead of returning a result."""
        try:
            return True, await work
        except asyncio.CancelledError:
            self.abandon("stopped")
        except OutOfTime:
            await self.end("timeout")
        except (EffectFailed, EffectRefused, ToolFailed, ValueRefused) as error:
            self._caught(step, error)
            self.fail(error.code)
        except MachineError as error:
            self._caught(step, error)
            raise
        except Exception as error:
            logs.warning("step.failed", turn=self.turn, step=step, error=str(error))
            self._caught(step, error)
            self.fail(str(getattr(error, "code", "")) or type(error).__name__)
        return False, None

    async def _ensure_input(self, step: str) -> bool:
        """True when ``step`` has its input, regained if the body lost it."""
        return step == "gather" or self._has_input(step) or await self._regain(step)

    async def drive(self) -> TurnState:
        """Walk the steps from the current state until the turn waits or ends."""
        if self._held is None:
            self._held = (self._monotonic(), self.running_ms())
            self.state.ran = self._ran_ms
        observers = self.settings.observers
        for observer in observers:
            call_hook("turn_began", observer.turn_began, self.state)
        try:
            while self.state.state in RUNNING:
                if self.ending is not None:
                    reason, error = self.ending
                    await self.end(reason, error=error)
                    break
                if self.over_time():
                    await self.end("timeout")
                    break
                step = self.state.state
                for observer in observers:
                    call_hook("step_began", observer.step_began, self.state, step)
                try:
                    if not await self._step(step):
                        break
                finally:
                    for observer in reversed(observers):
                        call_hook("step_ended", observer.step_ended, self.state, step)
        finally:
            for observer in reversed(observers):
                call_hook("turn_ended", observer.turn_ended, self.state)
        return self.state

    async def _step(self, step: str) -> bool:
        """Run ``step`` and take its transition; False when the run stops here."""
        going, regained = await self._guarded(step, self._ensure_input(step))
        if not going or not regained:
            return False
        if step == "finish":
            self._conclude()
            return False
        self.context = TurnContext(
            journal=self.journal,
            body=self._body(),
            state=self.state,
            step=step,
            sleep=self.settings.sleep,
        )
        going, result = await self._guarded(step, self._work(step, self.context))
        if not going:
            return False
        if isinstance(result, Wait):
            try:
                check_wait(result.on, result.until)
            except MachineError as error:
                self.fail(error.code)
                return False
        if isinstance(result, Skip) and step != "outcome":
            self.fail("HZM001")
            return False
        self._advance(step, result)
        return True
