"""The driver: start or resume a turn and walk its steps, checkpoint before work.

`start_turn` appends ``turn.started`` and walks gather -> think -> outcome -> act ->
finish. `resume_turn` folds the turn's own events, applies the resume rules
(`machines.resume`) and continues from the last checkpoint. The live state is the
fold of what was appended (a `_Tracking` journal applies each event as it is
written), and after every transition the machine's state must equal the fold's:
pi's fixed-point self-check, made permanent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from ledger.event import Clock, Event, format_ts, parse_ts
from machines import logs
from machines.context import TurnContext
from machines.effects import EffectFailed, EffectRefused, Settled, Sleep
from machines.errors import MachineError
from machines.fold import TurnState, apply_event
from machines.host_vocabulary import HZ, Vocabulary
from machines.journal import Body, Journal, content_ref
from machines.steps import Acted, Fail, OutOfTime, Skip, Steps, Wait
from machines.table import NEXT_TRIGGER, RUNNING
from machines.tools import ToolFailed
from machines.turn import TurnMachine
from machines.vocabulary import SKIP_REASONS
from machines.waits import check_wait

NEXT_STEP = {"gather": "think", "think": "outcome", "outcome": "act", "act": "finish"}
"""The step each step hands its result to."""

PREVIOUS_STEP = {after: before for before, after in NEXT_STEP.items()}
"""The step whose result each step takes as its input."""

_STOPS = object()
"""`TurnRun._value` of a result the turn does not continue with."""


@dataclass(frozen=True, slots=True)
class Settings:
    """The host's knobs: the injected clock and sleep, the limits of ADR 0049, and
    the host's vocabulary."""

    clock: Clock
    sleep: Sleep
    max_resumes: int = 3
    timeout: timedelta = timedelta(minutes=10)
    max_wait: timedelta = timedelta(days=7)
    vocabulary: Vocabulary = HZ
    """The host's dispositions and causes (`machines.host_vocabulary`); hz's by default."""


class _Tracking:
    """A journal wrapper that folds every event it appends into the live state."""

    def __init__(self, journal: Journal, state: TurnState, vocabulary: Vocabulary) -> None:
        self.inner = journal
        self.state = state
        self.vocabulary = vocabulary

    def append(
        self,
        kind: str,
        data: Mapping[str, Any] | None = None,
        *,
        turn: str | None = None,
        key: str | None = None,
        short_text: Sequence[str] = (),
    ) -> Event:
        event = self.inner.append(kind, data, turn=turn, key=key, short_text=short_text)
        if event.turn == self.state.turn:
            apply_event(self.state, event, self.vocabulary)
        return event

    def turn_events(self, turn: str) -> list[Event]:
        return self.inner.turn_events(turn)

    def key_events(self, key: str) -> list[Event]:
        return self.inner.key_events(key)

    def recorded_done(self, key: str) -> str | None:
        return self.inner.recorded_done(key)


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
        return {
            "disposition": disposition,
            "usd": self.state.spend_usd,
            "duration_ms": self.state.running_ms_at(self.settings.clock()),
            **{k: v for k, v in extra.items() if v is not None},
        }

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
        probed and what is found recorded (`machines.effects.settle_effect`) by the
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
                await self.steps.act(ctx, self._input("act"))
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
        return self.state.running_ms_at(self.settings.clock()) > limit

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
        value = self._value(before, await self._work(before, context))
        if value is _STOPS:
            self.fail("HZM013")
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
            return {"disposition": result.disposition, **result.data}
        return result

    def _body(self) -> Body:
        if self.body is None:
            raise MachineError("HZM016", "this run has no body", "pass the turn body")
        return self.body

    async def _work(self, step: str, ctx: TurnContext) -> Any:
        steps = self.steps
        if steps is None:
            raise MachineError("HZM016", "this run has no steps", "pass the host's steps")
        if step == "gather":
            return await steps.gather(ctx)
        work = {"think": steps.think, "outcome": steps.outcome, "act": steps.act}
        return await work[step](ctx, self._input(step))

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
                self.fail("HZM014")
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

    async def _guarded(self, step: str, work: Awaitable[Any]) -> tuple[bool, Any]:
        """Await a step's work; ``(False, None)`` when it ended the turn (stopped,
        failed) instead of returning a result."""
        try:
            return True, await work
        except asyncio.CancelledError:
            self.abandon("stopped")
        except OutOfTime:
            await self.end("timeout")
        except (EffectFailed, EffectRefused, ToolFailed) as error:
            self.fail(error.code)
        except MachineError:
            raise
        except Exception as error:
            logs.warning("step.failed", turn=self.turn, step=step, error=str(error))
            self.fail(str(getattr(error, "code", "")) or type(error).__name__)
        return False, None

    async def _ensure_input(self, step: str) -> bool:
        """True when ``step`` has its input, regained if the body lost it."""
        return step == "gather" or self._has_input(step) or await self._regain(step)

    async def drive(self) -> TurnState:
        """Walk the steps from the current state until the turn waits or ends."""
        while self.state.state in RUNNING:
            if self.ending is not None:
                reason, error = self.ending
                await self.end(reason, error=error)
                break
            if self.over_time():
                await self.end("timeout")
                break
            step = self.state.state
            going, regained = await self._guarded(step, self._ensure_input(step))
            if not going or not regained:
                break
            if step == "finish":
                self._conclude()
                break
            self.context = TurnContext(
                journal=self.journal,
                body=self._body(),
                state=self.state,
                step=step,
                sleep=self.settings.sleep,
            )
            going, result = await self._guarded(step, self._work(step, self.context))
            if not going:
                break
            if isinstance(result, Wait):
                try:
                    check_wait(result.on, result.until)
                except MachineError as error:
                    self.fail(error.code)
                    break
            if isinstance(result, Skip) and step != "outcome":
                self.fail("HZM001")
                break
            self._advance(step, result)
        return self.state
