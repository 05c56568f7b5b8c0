"""The think step: one pydantic-ai Agent per turn, stepped node by node and checkpointed.

`think` builds the Agent (instructions, generated tools, ``output_type=Outcome``,
plus ``DeferredToolRequests`` when the host gives write tools for a chat turn),
drives it with ``Agent.iter()`` and, after every node, writes the step: one
``step.model`` spine line per model request, carrying the tool calls whose results it
sent (a ``step.tool`` line for a call no request follows, ``step.handoff`` for a
handoff), hashes, tokens and cost only, with the messages
into the body (`heinzel.engine.body`). A resume continues the body's
Conversation; steering is ``AgentRun.enqueue(..., priority="asap")`` before the
next request; stop is ``AgentRun.cancel()`` with the snapshot as the body's last
record, also in the middle of a model request; the turn's time left is the run's
``timeout`` (``RunTimedOut``: status ``timeout``); each model request is reserved against
the caps before it is sent (`heinzel.engine.capped`), and a token ceiling stops a step from
inside. A provider's failure ends the run ``failed`` with its fault
(`heinzel.engine.faults`): a short spine code and the coded cause.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal

from pydantic_ai import (
    Agent,
    AgentRunError,
    CallToolsNode,
    DeferredToolRequests,
    FunctionToolset,
    ModelRequestNode,
    ModelRetry,
    RunCancelled,
    RunContext,
    RunTimedOut,
    UnexpectedModelBehavior,
    UsageLimitExceeded,
    UsageLimits,
)
from pydantic_ai.conversation import Conversation
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models import Model
from pydantic_ai.toolsets import AbstractToolset
from pydantic_graph import End

from heinzel.engine.body import Saved, dump_conversation, dump_messages
from heinzel.engine.capped import CappedModel, CapReached
from heinzel.engine.context import TurnContext
from heinzel.engine.errors import INVALID_REPLY, EngineError
from heinzel.engine.faults import INVALID_OUTCOME, NotJsonReply, WrongShapeReply, fault_of
from heinzel.engine.money import Budget, Purse
from heinzel.engine.outcome import Disposition, Outcome, check_against, failed, judge
from heinzel.engine.retrying import provider_failure
from heinzel.engine.spec import Recorder, TurnSpec
from heinzel.engine.steps import Stepper
from heinzel.engine.tools import Report, TurnServices, build_toolset, replay_safety
from ledger.errors import HzError
from ledger.records import frozen_record

if TYPE_CHECKING:  # a chat turn's proposals and answers: loaded when one runs
    from heinzel.engine.chat import Answer, Proposal

__all__ = ["INVALID_OUTCOME", "PROVIDER_ERROR", "ThinkResult", "think"]

PROVIDER_ERROR = "provider-http"
"""A turn the provider failed with an HTTP status: ``provider-http-<status>``."""

Status = Literal["outcome", "failed", "deferred", "stopped", "cap", "timeout"]
CompileContract = Callable[[str], object]
"""Compiles a contract text; raises an `HzError` (its render goes back as a retry)."""


@frozen_record
class ThinkResult:
    """How the think step ended, with the Conversation as the body now holds it."""

    status: Status
    disposition: Disposition
    conversation: Conversation
    usd: Decimal
    outcome: Outcome | None = None
    proposals: tuple[Proposal, ...] = ()
    reports: tuple[Report, ...] = ()
    interrupted: tuple[str, ...] = ()
    error: str | None = None
    failure: EngineError | None = None
    """A failed think's coded cause (HZE010 to HZE021) with its fix, for the user."""
    fault: str | None = None
    """A failed think's short code for the spine (``provider-timeout``, ``invalid-outcome``,
    `heinzel.engine.faults`), None when the failure has none."""


def _last_retry(messages: Sequence[ModelMessage]) -> str:
    for message in reversed(messages):
        for part in getattr(message, "parts", ()):
            if part.part_kind == "retry-prompt" or getattr(part, "outcome", None) == "retried":
                content = getattr(part, "content", "")
                return content if isinstance(content, str) else json.dumps(content, default=str)
    return ""


def _invalid_reply(complaint: str, name: str) -> EngineError:
    """HZE011 for a reply that never validated (its hint retries ``name``)."""
    said = f": {complaint[:300]}" if complaint else ""
    return EngineError(
        INVALID_REPLY,
        f"the model's reply was not a valid outcome, after one retry{said}",
        "try a stronger model (`agent.model_class: best`), or say what to fix: "
        f'`hz heinzel retry {name} "hint"`',
    )


async def think(
    spec: TurnSpec,
    context: TurnContext,
    *,
    model: Model,
    recorder: Recorder,
    budget: Budget,
    services: TurnServices | None = None,
    history_body: Sequence[Mapping[str, Any]] = (),
    steering: Callable[[], Sequence[str]] | None = None,
    stop: asyncio.Event | None = None,
    write_tools: FunctionToolset[None] | None = None,
    read_tools: FunctionToolset[None] | None = None,
    answers: Mapping[str, Answer] | None = None,
    compile_contract: CompileContract | None = None,
    retries: int = 2,
    output_retries: int = 1,
    time_left: float | None = None,
    purse: Purse | None = None,
) -> ThinkResult:
    """Run (or resume) the think step of one turn and return how it ended.

    ``context`` comes from `build_context` (on a resume it is not re-read: the body's
    Conversation is the turn's pinned context). ``history_body`` is the turn body's
    records so far (empty for a fresh turn). ``services`` feeds the tools; the engine
    sets its journalling hooks and ``remaining_usd``. ``steering`` returns the messages
    to deliver before the next request (each already recorded as ``turn.steered``);
    setting ``stop`` cancels the run. ``write_tools`` (a chat turn) need approval:
    the run pauses with proposals, and ``answers`` resumes it. ``read_tools`` (a chat
    turn) are hz's read operations, replay-safe, beside the contract's own tools.
    ``compile_contract`` checks an amendment's text; its `HzError` goes back to the model
    as a retry.
    ``retries`` bounds a tool's retries, ``output_retries`` the outcome's (one, then HZE011).
    ``time_left`` (seconds, None: no limit) bounds the whole run: when it runs out, in a
    model request or a retry's wait, the run ends with status ``timeout``.
    ``purse`` reserves each request's worst case (the host's writes ``model.reserved``
    under the home's spend lock); without one, each is checked against the budget alone.
    Raises `EngineError` for what the caller must fix (HZE001, HZE005, HZE006, HZE007,
    HZE009); a model's failure or a cap is a result, not an exception.
    """
    services = services or TurnServices()
    saved = Saved.fold(history_body)
    budget.pricing.require(model.model_name, model.system)
    if saved.empty:
        budget.check_start()

    def started(call_id: str, tool: str) -> None:
        saved.started.add(call_id)
        recorder.body({"kind": "tool.started", "id": call_id, "tool": tool})
        recorder.durable()  # the call is not replay-safe: its start is on disk before it runs

    services.was_started = lambda call_id: call_id in saved.started
    services.started = started
    toolset = build_toolset(spec, services, context.instructions)
    safety = dict(replay_safety(toolset))
    toolsets: list[AbstractToolset[None]] = [toolset]
    output_type: Any = Outcome
    if read_tools is not None:  # a chat turn's hz reads (replay-safe: they read the index)
        safety.update(replay_safety(read_tools))
        toolsets.append(read_tools)
    if write_tools is not None:
        safety.update(dict.fromkeys(write_tools.tools, False))
        toolsets.append(write_tools.approval_required())
        output_type = [Outcome, DeferredToolRequests]
    # Outcome's own schema, built once here (it is deferred): pydantic-ai's adapters of the
    # output type reuse a complete model's schema, and the turn's result dumps through it;
    # otherwise each builds its own (three builds of one schema on a wake)
    Outcome.model_rebuild()
    stepper = Stepper(recorder, budget, model, saved, safety)
    if purse is None:
        purse = Purse(budget, lambda: stepper.usd)
    agent: Agent[None, Any] = Agent(
        CappedModel(model, budget.pricing, purse),
        instructions=context.instructions,
        output_type=output_type,
        toolsets=toolsets,
        retries={"tools": retries, "output": output_retries},
        name=f"turn-{spec.turn}",
    )

    @agent.output_validator
    def _validate(ctx: RunContext[None], output: Any) -> Any:
        if not isinstance(output, Outcome):
            return output
        problems = check_against(
            output, spec, summary_due=context.summary_due, previous_summary=context.previous_summary
        )
        if output.amendment is not None and compile_contract is not None:
            try:
                compile_contract(output.amendment.text)
            except HzError as error:
                problems.append(f"the contract does not compile: {error.render()}")
        if problems:
            raise ModelRetry("; ".join(problems))
        return output

    if saved.empty:
        conversation = Conversation(messages=list(context.messages), conversation_id=spec.turn)
        recorder.body(
            {
                "kind": "pending",
                "messages": dump_messages(context.messages),
                "conversation_id": spec.turn,
            }
        )
    else:
        conversation = saved.conversation()
    deferred = None
    if answers:  # a chat turn resumed with its proposals answered
        from heinzel.engine.chat import deferred_results

        deferred = deferred_results(conversation, answers)
    services.remaining_usd = lambda: budget.remaining(stepper.usd)
    ceiling = budget.token_ceiling(model.model_name, model.system, stepper.usd, conversation.usage)
    limits = UsageLimits(request_limit=conversation.usage.requests + 50, total_tokens_limit=ceiling)

    def ended(
        status: Status,
        disposition: Disposition,
        messages: list[ModelMessage],
        usage: Any,
        **extra: Any,
    ) -> ThinkResult:
        conv = Conversation(
            messages=messages, usage=usage, conversation_id=conversation.conversation_id
        )
        return ThinkResult(
            status,
            disposition,
            conv,
            stepper.usd,
            reports=tuple(services.reports.values()),
            interrupted=tuple(services.interrupted),
            **extra,
        )

    if budget.would_cross(stepper.usd, Decimal(0)):
        return ended(
            "cap", Disposition("skipped", "cap"), conversation.messages, conversation.usage
        )
    try:
        async with agent.iter(
            None,
            conversation=conversation,
            usage_limits=limits,
            deferred_tool_results=deferred,
            timeout=time_left,
        ) as run:
            watcher = asyncio.ensure_future(stop.wait()) if stop is not None else None
            if watcher is not None:
                watcher.add_done_callback(lambda done: None if done.cancelled() else run.cancel())
            node: Any = run.next_node
            try:
                while not isinstance(node, End):
                    if isinstance(node, ModelRequestNode):
                        if budget.would_cross(stepper.usd, stepper.last_usd):
                            spent = (stepper.usd, budget.spent_today + stepper.usd)
                            purse.refused = (stepper.last_usd, *spent)  # the last as the next
                            stepper.record_pending(node.request, conversation.conversation_id)
                            return ended(
                                "cap", Disposition("skipped", "cap"), run.all_messages(), run.usage
                            )
                        for message in steering() if steering is not None else ():
                            run.enqueue(message, priority="asap")
                    ran = node
                    node = await run.next(node)
                    messages = run.all_messages()
                    if isinstance(ran, ModelRequestNode):
                        stepper.record_request(messages, run.usage, conversation.conversation_id)
                    elif isinstance(ran, CallToolsNode):
                        parts = (
                            node.request.parts
                            if isinstance(node, ModelRequestNode)
                            else [
                                p
                                for m in messages[stepper.settled :]
                                for p in getattr(m, "parts", ())
                            ]
                        )
                        followed = isinstance(node, ModelRequestNode)
                        stepper.record_tools(parts, services.interrupted, followed=followed)
                        if isinstance(node, ModelRequestNode):
                            stepper.record_pending(node.request, conversation.conversation_id)
            except CapReached as error:  # refused before it was sent: nothing more spent
                stepper.record_request(run.all_messages(), run.usage, conversation.conversation_id)
                return ended(
                    "cap",
                    Disposition("skipped", "cap"),
                    run.all_messages(),
                    run.usage,
                    error=str(error),
                )
            except UsageLimitExceeded as error:
                stepper.record_request(run.all_messages(), run.usage, conversation.conversation_id)
                return ended(
                    "cap",
                    Disposition("skipped", "cap"),
                    run.all_messages(),
                    run.usage,
                    error=str(error),
                )
            except RunCancelled:
                raise  # stopped or out of time: below, with the snapshot
            except (AgentRunError, NotJsonReply, WrongShapeReply) as error:
                if isinstance(error, UnexpectedModelBehavior):  # a reply came back: charged
                    stepper.record_request(
                        run.all_messages(), run.usage, conversation.conversation_id
                    )
                fault = fault_of(error)
                failure = provider_failure(error, model, spec.contract_name)
                spine = fault.spine if fault is not None else None
                detail = str(error).splitlines()[0][:300] if str(error) else type(error).__name__
                if fault is None and str(error).startswith("Exceeded maximum output retries"):
                    complaint = _last_retry(run.all_messages())
                    detail = f"{error}: {complaint}".strip(": ")
                    failure, spine = _invalid_reply(complaint, spec.contract_name), INVALID_OUTCOME
                return ended(
                    "failed",
                    failed(detail),
                    run.all_messages(),
                    run.usage,
                    error=detail,
                    failure=failure,
                    fault=spine,
                )
            finally:
                stepper.flush_tools()
                if watcher is not None:
                    watcher.cancel()
            output = run.result.output if run.result is not None else None
            messages = run.all_messages()
            stepper.record_request(messages, run.usage, conversation.conversation_id)
            if isinstance(output, DeferredToolRequests):
                conv = Conversation(
                    messages=messages,
                    usage=run.usage,
                    conversation_id=conversation.conversation_id,
                    deferred_tool_requests=output,
                )
                recorder.body(
                    {
                        "kind": "conversation",
                        "conversation": dump_conversation(conv),
                        "usd": str(stepper.usd),
                    }
                )
                from heinzel.engine.chat import proposals  # a chat turn's write tools

                asked = proposals(output)
                for proposal in asked:
                    recorder.checkpoint(
                        "question.asked",
                        {
                            "proposal": proposal.call_id,
                            "tool": proposal.tool,
                            "hash": proposal.hash,
                        },
                    )
                return ThinkResult(
                    "deferred",
                    Disposition("asked"),
                    conv,
                    stepper.usd,
                    proposals=asked,
                    reports=tuple(services.reports.values()),
                )
            assert isinstance(output, Outcome)
            return ended("outcome", judge(output), messages, run.usage, outcome=output)
    except RunCancelled as cancelled:
        timed_out = isinstance(cancelled, RunTimedOut)
        snapshot = Conversation(
            messages=cancelled.all_messages(),
            usage=cancelled.usage,
            conversation_id=conversation.conversation_id,
        )
        body = {"kind": "conversation", "conversation": dump_conversation(snapshot)}
        recorder.body({**body, "usd": str(stepper.usd)})
        if timed_out:
            return ended("timeout", failed("timeout"), snapshot.messages, snapshot.usage)
        return ended(
            "stopped", Disposition("skipped", "stopped"), snapshot.messages, snapshot.usage
        )
