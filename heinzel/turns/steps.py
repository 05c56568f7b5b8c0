"""`HeinzelSteps`: gather -> think -> outcome -> act for one Heinzelmännchen's turn.

gather reads the staged inputs from the source cache (never fetching), think runs
`heinzel.engine.think` with the turn pinned and writes through `EngineRecorder`,
outcome turns the engine's judgement into the machine's Skip/Fail/value, and act
performs what the outcome asks through the machine's effect ledger (`heinzel.turns.act`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import asdict
from datetime import datetime
from decimal import Decimal
from typing import Any, cast

from heinzel.capabilities.documents import approved_text
from heinzel.engine.context import build_context
from heinzel.engine.errors import TURN_TIME_UP, EngineError
from heinzel.engine.money import Budget, Purse, turn_cap
from heinzel.engine.outcome import Outcome
from heinzel.engine.spec import Cause, InputSpec, TurnSpec
from heinzel.turns.act import perform, write_summary
from heinzel.turns.chat import question_key, read_tools, settle, write_tools
from heinzel.turns.env import TurnEnv
from heinzel.turns.failure import keep_failure, refusal
from heinzel.turns.flow import fall_back
from heinzel.turns.inputs import read_staged
from heinzel.turns.record import EngineRecorder
from heinzel.turns.waits import hold
from machines import Acted, Fail, OutOfTime, Skip, TurnContext, Wait

__all__ = ["HeinzelSteps", "TurnEnv", "watching_stop"]

STOP_POLL = 0.2
"""Seconds between two looks at the inbox for a stop while the model is asked (a signal
to this process is seen at once)."""


@asynccontextmanager
async def watching_stop(env: TurnEnv) -> AsyncIterator[asyncio.Event]:
    """An event set when the running turn is asked to stop, in the middle of a model
    request too: at once on a signal to this process (`heinzel.turns.interrupt`), within
    `STOP_POLL` seconds on ``hz heinzel stop`` from another process (the inbox)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def wake() -> None:
        loop.call_soon_threadsafe(stop.set)

    undo = env.on_interrupt(wake) if env.on_interrupt else None

    async def watch() -> None:
        while not stop.is_set():
            if env.stop_asked is not None and env.stop_asked():
                stop.set()
                return
            try:
                await asyncio.wait_for(stop.wait(), STOP_POLL)
            except TimeoutError:
                continue

    watcher = asyncio.ensure_future(watch())
    try:
        yield stop
    finally:
        watcher.cancel()
        if undo is not None:
            undo()


def time_left(env_timeout: float, ctx: TurnContext, now: datetime) -> float:
    """Seconds the turn may still run (its contract's ``timeout`` less its running time)."""
    return max(0.001, env_timeout - ctx.state.running_ms_at(now) / 1000)


class HeinzelSteps:
    """The host's steps of a turn (the machine's `Steps` protocol)."""

    def __init__(self, env: TurnEnv) -> None:
        self.env = env

    def _cap(self) -> Decimal | None:
        agent = self.env.contract.hz.agent
        contract_cap = None if agent.max_usd is None else Decimal(str(agent.max_usd))
        return turn_cap(contract_cap, self.env.settings_max_usd)

    async def gather(self, ctx: TurnContext) -> Any:
        """The staged inputs (from the cache, or a fork's parent's) and this wake's own
        inputs, into the body; an input that reads another Heinzelmännchen's output as its
        approved text."""
        if self.env.reused is not None:
            staged = [dict(i) for i in self.env.reused]
        else:
            staged = read_staged(self.env.requests, self.env.cache, self.env.restage)
        for item in staged:  # another's output: its approved text only (docs/graph.md)
            if item.get("name") in self.env.upstream:
                item["content"] = approved_text(str(item.get("content") or ""))
        extra = [
            {"name": i.name, "source": i.source, "content": i.content}
            for i in self.env.extra_inputs
        ]
        extra += fall_back(self.env, ctx, staged)
        return {"inputs": [*staged, *extra], "started_at": self.env.clock().isoformat()}

    async def think(self, ctx: TurnContext, gathered: Any) -> Any:
        """One engine run (or its resume from the body), checkpointed into the spine; a
        chat turn's run paused on proposals waits for their answers (`heinzel.turns.chat`)."""
        from heinzel.engine.run import think  # pydantic-ai loads here, when a model runs
        from heinzel.engine.tools import TurnServices

        env = self.env
        inputs = tuple(
            InputSpec(i["name"], i["content"], i.get("source", "")) for i in gathered["inputs"]
        )
        spec = TurnSpec(
            turn=ctx.turn,
            cause=cast(Cause, ctx.cause or "asked"),
            contract_name=env.name,
            contract_version=env.version,
            body=env.contract_body,
            started_at=datetime.fromisoformat(gathered["started_at"]),
            inputs=inputs,
            outputs=tuple(env.contract.hz.outputs),
            done_when=tuple(env.contract.body.done_when),
            max_usd=None
            if env.contract.hz.agent.max_usd is None
            else Decimal(str(env.contract.hz.agent.max_usd)),
            model_class=env.contract.hz.agent.model_class,
        )
        cap = self._cap()
        context = build_context(
            spec,
            env.view,
            bodies=env.recent,
            lessons=env.lessons,
            skills=env.skills,
            last_approved=env.last_approved,
            handoff=env.runner is not None,
            settings=env.context_settings,
        )
        recorder = EngineRecorder(
            ctx.journal, env.body.bodies, ctx.turn, cap_usd=cap or Decimal(0), sync=env.sync
        )
        budget = Budget(env.pricing, cap, env.day_usd, env.spent_today)
        purse = Purse(  # each request reserved under the home's spend lock (the turn's fold)
            budget,
            lambda: Decimal(str(ctx.state.spend_usd)),
            recorder.checkpoint,
            hold=env.hold_day,
        )
        handoff = None
        if env.runner is not None:
            handoff = env.runner(ctx.turn, ctx.journal)
            if handoff is not None:
                handoff.recorder = recorder
                recorder.runner_name = handoff.name
        services = TurnServices(
            view=env.view,
            last_approved=env.last_approved,
            contract_text=env.contract_text,
            lessons=env.lessons,
            capabilities=env.capabilities,
            runner=handoff,
        )

        def steering() -> list[str]:
            if env.poll is not None:
                env.poll()
            texts = [self._message(steer.request_id) for steer in ctx.take_steers()]
            return [text for text in texts if text]

        writes = env.writes if ctx.cause == "asked" else None
        if writes is not None:
            recorder.question_key = lambda call_id: question_key(env.heinzel_id, ctx.turn, call_id)
        while True:
            history = env.body.records(ctx.turn)
            answers = await settle(writes, ctx, history) if writes is not None else None
            if isinstance(answers, Wait):
                return answers
            limit = env.contract.hz.timeout.total_seconds()
            try:
                async with watching_stop(env) as stop:
                    result = await think(
                        spec,
                        context,
                        model=env.model,
                        recorder=recorder,
                        budget=budget,
                        services=services,
                        history_body=history,
                        steering=steering,
                        stop=stop,
                        write_tools=write_tools() if writes is not None else None,
                        read_tools=read_tools(env.reads) if env.reads is not None else None,
                        answers=answers,
                        compile_contract=env.compile_contract,
                        time_left=time_left(limit, ctx, env.clock()),
                        purse=purse,
                    )
            except EngineError as error:
                if error.code != "HZE005":
                    raise
                keep_failure(env.body, ctx.turn, error)  # the skip's coded notice
                return {"status": "cap", "error": error.code}
            ended_early(env, ctx, result.status, limit)
            if result.status != "deferred":
                break
        if result.status == "cap" and purse.refused is not None:
            keep_failure(env.body, ctx.turn, refusal(env.name, budget, *purse.refused))
        return {
            "status": result.status,
            "disposition": asdict(result.disposition),
            "outcome": None if result.outcome is None else result.outcome.model_dump(mode="json"),
            "usd": str(result.usd),
            "error": result.error,
            "fault": result.fault,
            "failure": None
            if result.failure is None
            else {
                "code": result.failure.code,
                "message": result.failure.message,
                "hint": result.failure.hint,
            },
            "reports": [
                {"id": r.call_id, "verb": r.verb, "target": r.target, "description": r.description}
                for r in result.reports
            ],
        }

    def _message(self, request_id: str) -> str:
        """A steering message's text from the inbox (empty when it is gone)."""
        if self.env.inbox is None:
            return ""
        try:
            path = self.env.inbox / f"{request_id}.json"
            return str(json.loads(path.read_text(encoding="utf-8")).get("message") or "")
        except (OSError, ValueError):
            return ""

    async def outcome(self, ctx: TurnContext, thought: Any) -> Any:
        """The engine's judgement as the machine's: a skip, a failure, or what to act on."""
        status = thought["status"]
        if status == "cap":
            return Skip("cap")
        if status != "outcome" or thought["outcome"] is None:
            failure = thought.get("failure")
            if failure:
                keep_failure(self.env.body, ctx.turn, EngineError(**failure))
            fault = thought.get("fault")
            if fault:
                return Fail(str(fault))
            return Fail("invalid-outcome" if status == "failed" else status)
        disposition = thought["disposition"]
        if ctx.cause == "approval":
            return thought
        held = hold(self.env, ctx, Outcome.model_validate(thought["outcome"]))
        if held is not None:
            return held
        if disposition["disposition"] == "skipped":
            await write_summary(self.env, ctx, Outcome.model_validate(thought["outcome"]))
            reason = disposition.get("reason")
            return Skip("done-when-unmet" if reason == "done-when-unmet" else "check-unmet")
        return thought

    async def act(self, ctx: TurnContext, decided: Any) -> Acted | Wait | Fail:
        """Perform the outcome's acts through the effect ledger (see `heinzel.turns.act`)."""
        return await perform(self.env, ctx, decided)


def ended_early(env: TurnEnv, ctx: TurnContext, status: str, limit: float) -> None:
    """A think the user stopped raises what the machine ends ``abandoned stopped``; one
    the turn's time limit stopped, ``abandoned timeout`` (its cause, HZE022, kept)."""
    if status == "stopped":
        raise asyncio.CancelledError("stopped in a model request")
    if status == "timeout":
        keep_failure(
            env.body,
            ctx.turn,
            EngineError(
                TURN_TIME_UP,
                f"the turn ran out of its time limit ({limit:g} s) while the model was asked",
                "the provider is slow or hung: raise the contract's `timeout:`, or try again "
                f"later with `hz heinzel retry {env.name}`",
            ),
        )
        raise OutOfTime
