"""The chat turns' write gate: hz's writes proposed by the model, asked, answered, done once.

Only a turn of cause asked gets write tools (`write_tools`: ``pause(reason)`` and
``retire(reason)``, ADR 0050 statement 12). The engine never runs them: a call ends
the think run deferred; each proposal is one ``question.asked{proposal, tool, hash}``
under its question key ``<id>@question:<turn>:<call id>`` (the arguments stay in the
body) and the turn waits on ``{kind: answer, key}``. `heinzel.turns.answer` (``hz heinzel answer``)
writes the answer to ``inbox/answer-<call id>.json`` first, then
``question.answered{approved}`` under the key, then resumes the turn. The think step
(`settle`) reads the answers from the spine or the inbox; an approved write is
performed by the host through the effect ledger (key: the question key, probed by
its own lifecycle event under that key) and its result goes back to the model as the
tool's return; a denied one gives the model the denial.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heinzel.errors import HeinzelError
from heinzel.store.lifecycle import Lifecycle
from ledger.records import frozen_record
from machines import Effect, LocalProbe, TurnContext, Wait
from machines.core.effects import recorded_in

if TYPE_CHECKING:  # the engine and pydantic-ai load when a chat turn thinks
    from pydantic_ai import FunctionToolset
    from pydantic_ai.messages import ToolCallPart

    from heinzel.engine import Answer

__all__ = [
    "ChatReads",
    "ChatWrites",
    "inbox_answer",
    "question_key",
    "read_tools",
    "settle",
    "write_tools",
]

WRITES = {"pause": ("heinzel.paused", "paused"), "retire": ("heinzel.retired", "retired")}
"""Each write tool: its lifecycle event (the effect's own event) and the word for its result."""


def question_key(heinzel_id: str, turn: str, call_id: str) -> str:
    """``<id>@question:<turn>:<call id>``: one question per proposed write."""
    return f"{heinzel_id}@question:{turn}:{call_id}"


@frozen_record
class ChatWrites:
    """What the gate needs of the service: whose turn, its lifecycle state now, the inbox."""

    heinzel_id: str
    name: str
    state: Callable[[], str]
    inbox: Path


@frozen_record
class ChatReads:
    """hz's read operations a chat turn may call (ADR 0050 statement 3), each from the
    index (and one spine line for a summary): what `hz heinzel list`, `show` and `hz
    drafts` answer, never a write. ``show`` raises `HeinzelError` for an unknown name."""

    listing: Callable[[], list[dict[str, Any]]]
    show: Callable[[str], dict[str, Any]]
    drafts: Callable[[], list[dict[str, Any]]]


_LISTED = ("name", "namespace", "state", "contract_name", "contract_version", "next_due")
_TURNS_SHOWN = 5


def read_tools(reads: ChatReads) -> FunctionToolset[None]:
    """The chat turn's read tools: the home's Heinzelmännchen, one in detail, the drafts
    waiting on the user. Replay-safe (they read the index); their results pass
    `heinzel.engine.clean.clean_value` as every tool result does, so they reach the model
    as data. A bad name is an answer (its code and hint), not a failure of the turn.
    They run on the event loop's thread, where the index's connection lives."""
    from pydantic_ai import FunctionToolset

    from heinzel.engine.clean import clean_value

    toolset: FunctionToolset[None] = FunctionToolset()

    async def hz_list() -> list[dict[str, Any]]:
        """Every Heinzelmännchen of this home: name, namespace, state, contract and version,
        next due slot, and its pending item (what waits on the user), from hz's index."""
        rows = reads.listing()
        return [
            clean_value({**{k: row.get(k) for k in _LISTED}, "pending": row.get("pending")})
            for row in rows
        ]

    async def hz_show(name: str) -> dict[str, Any]:
        """One Heinzelmännchen in detail: state, contract version, its last turns (how each
        ended and what it cost), what it learned, its pending drafts and its latest
        summary. ``name`` as `hz heinzel list` shows it."""
        try:
            shown = reads.show(name)
        except HeinzelError as error:
            return {"error": error.code, "message": error.message, "hint": error.hint}
        turns = [
            {k: t.get(k) for k in ("started_at", "cause", "disposition", "state", "cost_usd")}
            for t in shown.get("turns", [])[-_TURNS_SHOWN:]
        ]
        lessons = [les["sentence"] for les in shown.get("lessons", []) if not les["dismissed"]]
        drafts = [d for d in shown.get("drafts", []) if d.get("state") == "pending"]
        answer = {
            **{k: shown.get(k) for k in _LISTED},
            "pending": shown.get("pending"),
            "turns": turns,
            "lessons": lessons,
            "drafts": drafts,
            "summary": shown.get("summary"),
            "cost_month": shown.get("cost_month"),
        }
        return dict(clean_value(answer))

    async def hz_drafts() -> list[dict[str, Any]]:
        """The drafts of this home waiting on the user's approval: whose, where, which
        output, placed when."""
        return [clean_value(row) for row in reads.drafts()]

    for fn in (hz_list, hz_show, hz_drafts):
        toolset.add_function(fn, metadata={"replay_safe": True})
    return toolset


def _host_only(tool: str) -> str:
    raise HeinzelError(
        "HZH213",
        f"the chat write {tool} ran inside the model's run",
        "chat writes are performed by hz's host after an answer; this is a bug in hz",
    )


def write_tools() -> FunctionToolset[None]:
    """The write tools of a turn of cause asked (each needs the user's yes)."""
    from pydantic_ai import FunctionToolset

    toolset: FunctionToolset[None] = FunctionToolset()

    def pause(reason: str) -> str:
        """Pause this Heinzelmännchen: it wakes no more until the user unpauses it.

        Args:
            reason: why, in one short sentence the user reads.
        """
        return _host_only("pause")

    def retire(reason: str) -> str:
        """Retire this Heinzelmännchen for good (the user can unretire it).

        Args:
            reason: why, in one short sentence the user reads.
        """
        return _host_only("retire")

    for fn in (pause, retire):
        toolset.add_function(fn, metadata={"replay_safe": False})
    return toolset


def inbox_answer(inbox: Path, call_id: str) -> bool | None:
    try:
        return bool(json.loads((inbox / f"answer-{call_id}.json").read_bytes())["approved"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _recorded(writes: ChatWrites, ctx: TurnContext, call_id: str, key: str) -> bool | None:
    """The answer to one proposal: from the spine, else from the inbox (then recorded)."""
    for event in ctx.journal.key_events(key):
        if event.kind == "question.answered":
            return bool(event.data.get("approved"))
    approved = inbox_answer(writes.inbox, call_id)
    if approved is not None:
        ctx.journal.append("question.answered", {"approved": approved}, turn=ctx.turn, key=key)
    return approved


def ask(ctx: TurnContext, key: str, data: dict[str, Any]) -> None:
    """``question.asked{proposal, tool, hash}`` under ``key``, once per key."""
    if not any(e.kind == "question.asked" for e in ctx.journal.key_events(key)):
        ctx.journal.append("question.asked", data, turn=ctx.turn, key=key)


async def _perform(writes: ChatWrites, ctx: TurnContext, call: ToolCallPart, key: str) -> str:
    """The approved write, once, through the effect ledger; the result the model reads."""
    event, word = WRITES[call.tool_name]
    if not any(e.kind in (event, "effect.started") for e in ctx.journal.key_events(key)):
        try:
            Lifecycle(writes.state()).fire(call.tool_name, writes.name)
        except HeinzelError as error:
            return f"not done: {error.message}"

    async def done(k: str) -> dict[str, str]:
        return {"done": call.tool_name, "key": k}

    probe = LocalProbe(recorded_in(ctx.journal, event))
    await ctx.effect(Effect(call.tool_name, key, done, probe, event))
    return f"done: {writes.name} is {word}"


async def settle(
    writes: ChatWrites, ctx: TurnContext, history: list[dict[str, Any]]
) -> dict[str, Answer] | Wait | None:
    """The answers that resume a paused chat run (writes performed), a `Wait` while one
    is missing, or None when the run is not paused on proposals."""
    from heinzel.engine.body import Saved

    deferred = Saved.fold(history).deferred
    requests = deferred.deferred_tool_requests if deferred is not None else None
    if requests is None or not requests.approvals:
        return None
    from heinzel.engine.chat import Answer, proposals  # the run paused on proposals

    keys = {
        c.tool_call_id: question_key(writes.heinzel_id, ctx.turn, c.tool_call_id)
        for c in requests.approvals
    }
    for proposal in proposals(requests):
        data = {"proposal": proposal.call_id, "tool": proposal.tool, "hash": proposal.hash}
        ask(ctx, keys[proposal.call_id], data)
    approved = {cid: _recorded(writes, ctx, cid, key) for cid, key in keys.items()}
    missing = [cid for cid, said in approved.items() if said is None]
    if missing and ctx.woken_by != "timer":
        return Wait(on={"kind": "answer", "key": keys[missing[0]]})
    answers: dict[str, Answer] = {}
    for call in requests.approvals:
        cid = call.tool_call_id
        if approved[cid]:
            answers[cid] = Answer(True, await _perform(writes, ctx, call, keys[cid]))
        elif approved[cid] is None:
            answers[cid] = Answer(
                False, message=f"no answer came in time: {call.tool_name} was not done"
            )
        else:
            answers[cid] = Answer(False, message=f"the user said no: {call.tool_name} was not done")
    return answers
