"""The act step: what an outcome asks, performed through the machine's effect ledger.

Every act is an `Effect` with a key, so a crash never performs one twice:

- place_draft: key ``<id>@v<version>@<slot>@<asset>``, probed by the document's
  markers (`find`), own event ``draft.placed{asset, output}``; markers
  already there for a key the spine never started are planted (HZH280, the turn fails);
  the text placed (and kept in the body) has any ``<!-- hz:`` of its own neutralised, so
  text an input carried into the draft never stops or steers a turn;
- record_lesson: ``<id>@lesson:<turn>:<n>``, the journal, ``lesson.recorded{sentence, sha256,
  hunks}``: the sentence scrubbed (secrets by detect-secrets' detectors and hz's rules,
  ``password LESSONPASSWORD`` included, and addresses: `heinzel.strings.scrub`) and cut to 200
  characters, with a hash of the sentence as the model wrote it;
- ask: ``<id>@question:<turn>:1``, the journal, ``question.asked{question}``;
- write_summary: ``<id>@summary:<turn>``, the journal, ``summary.written{<fixed fields>}``;
- observe an approval: the approval wake's key, the journal, ``approval.observed{...}``;
  then the documents adapter's ``settle`` removes hz's comments around the approved text.

An amendment goes to ``propose`` (the service's ``propose_amendment(by="heinzel")``);
a widening it refuses (HZC050) is recorded as ``amendment.refused{code}`` and the turn
goes on. An amendment whose ``asked_in`` names an input read from the inbox (the user's
chat message) is filed as the user's request, citing that message's request id and hash
(`asked_in`): the user's own words may widen the contract, and ``hz approve`` decides.
Text never enters the spine: hunks are hashes, the draft is in the document and the body.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

from heinzel.capabilities.documents import (
    absolute_asset,
    draft_tag,
    neutralise_markers,
    refuse_planted,
)
from heinzel.engine.outcome import Outcome
from heinzel.strings.scrub import scrub
from ledger.errors import HzError
from machines import Acted, Effect, Fail, LocalProbe, Presence, TurnContext, Wait, WorldProbe, keys
from machines.core.effects import recorded_in
from machines.stores.journal import content_hash

if TYPE_CHECKING:
    from heinzel.turns.env import TurnEnv

__all__ = ["SUMMARY_TEXTS", "asked_in", "perform", "write_summary"]

SUMMARY_TEXTS = ("asset", "wants", "decisions", "open_questions", "next_deadline", "sources")
"""The summary's fixed fields: short texts a user reads, so the context can chain them."""


def _short(value: str) -> str:
    return content_hash(value).removeprefix("sha256:")[:12]


async def _place(env: TurnEnv, ctx: TurnContext, outcome: Outcome) -> None:
    draft = outcome.draft
    assert draft is not None
    output = env.contract.hz.outputs[draft.output]
    asset = absolute_asset(output.asset, env.origin)
    key = keys.place_draft(env.heinzel_id, env.version, env.slot, asset)
    tag = draft_tag(env.name, env.version)
    documents = env.documents
    remember = getattr(documents, "remember", None)
    if remember is not None:  # a shortened asset in the key is found again by any process
        remember(asset)

    text = neutralise_markers(draft.text)  # an input's text never acts as hz's markers

    async def place(k: str) -> str:
        return str(documents.place_draft(k, asset, text, tag, output.place))

    async def find(k: str) -> Presence:
        return await asyncio.to_thread(documents.find, k)

    if not ctx.settling and key not in ctx.state.effects and not ctx.journal.key_events(key):
        refuse_planted(key, await find(key))  # the spine never started it: not hz's markers
    data = {"asset": asset, "output": draft.output}  # the version is the turn's pin
    placed = Effect("place_draft", key, place, WorldProbe(find), "draft.placed", data, ("asset",))
    await ctx.effect(placed)  # a deep folder's path passes the plain-field cap as short text
    env.body.put(ctx.turn, content_hash(text), {"draft": key, "text": text})


def _settle(env: TurnEnv, draft_key: str) -> None:
    """After ``approval.observed``, hz's two comments around the approved text go (the
    user's text stays); idempotent, so a resume that repeats it changes nothing."""
    settle = getattr(env.documents, "settle", None)
    if draft_key and settle is not None:
        # the approval is recorded; comments left by a failed settle are harmless
        with contextlib.suppress(HzError):
            settle(draft_key)


async def _local(
    ctx: TurnContext,
    name: str,
    key: str,
    event: str,
    data: dict[str, Any],
    *,
    short: tuple[str, ...] = (),
) -> None:
    async def done(k: str) -> dict[str, str]:
        return {"recorded": k}

    probe = LocalProbe(recorded_in(ctx.journal, event))
    await ctx.effect(Effect(name, key, done, probe, event, data, short_text=short))


async def write_summary(env: TurnEnv, ctx: TurnContext, outcome: Outcome) -> None:
    """``summary.written`` with the summary's fixed fields, once per turn (if asked for)."""
    if outcome.summary is None:
        return
    key = f"{env.heinzel_id}@summary:{ctx.turn}"
    summary = outcome.summary.model_dump(mode="json", exclude_none=True)
    await _local(ctx, "write_summary", key, "summary.written", summary, short=SUMMARY_TEXTS)


def asked_in(env: TurnEnv, name: str | None) -> dict[str, str] | None:
    """The user's message an amendment cites (``asked_in``), as its request id and hash:
    only an input hz read from the inbox counts; anything else makes it the turn's own."""
    for item in env.extra_inputs:
        if name and item.name == name and item.source.startswith("inbox:"):
            request = item.source.removeprefix("inbox:")
            return {"request": request, "hash": content_hash(item.content)}
    return None


async def perform(env: TurnEnv, ctx: TurnContext, decided: Any) -> Acted | Wait | Fail:
    """Perform the acts of ``decided`` (the think result) and say how the turn ends."""
    outcome = Outcome.model_validate(decided["outcome"])
    acts = decided["disposition"]["acts"]
    disposition = decided["disposition"]["disposition"]
    if "place_draft" in acts:
        if env.documents is None:
            return Fail("HZH201")
        await _place(env, ctx, outcome)
    for n, lesson in enumerate(outcome.lessons, start=1):
        data = {
            "sentence": scrub(lesson.sentence)[:200],
            "sha256": _short(lesson.sentence),
            "hunks": [_short(h) for h in lesson.hunks],
        }
        key = f"{env.heinzel_id}@lesson:{ctx.turn}:{n}"
        await _local(ctx, "record_lesson", key, "lesson.recorded", data, short=("sentence",))
    if outcome.amendment is not None and env.propose is not None:
        key = f"{env.heinzel_id}@amendment:{ctx.turn}"
        if not ctx.journal.key_events(key):
            asked = asked_in(env, outcome.amendment.asked_in)
            try:
                env.propose(outcome.amendment.text, outcome.amendment.why, asked)
                ctx.journal.append("amendment.filed", {}, turn=ctx.turn, key=key)
            except HzError as error:
                ctx.journal.append(
                    "amendment.refused", {"code": error.code}, turn=ctx.turn, key=key
                )
    await write_summary(env, ctx, outcome)
    if env.approval is not None:
        await _local(
            ctx,
            "observe_approval",
            str(env.approval["key"]),
            "approval.observed",
            {k: v for k, v in env.approval.items() if k != "key"},
        )
        disposition = "learned"
        draft_key = str(env.approval.get("draft_key") or "")
        approved = [i.content for i in env.extra_inputs if i.name == "approved"]
        if draft_key and approved:
            # the approved text stays readable (last_approved) once the markers are gone
            value = {"approved": draft_key, "text": approved[0]}
            env.body.put(ctx.turn, content_hash(approved[0]), value)
        _settle(env, draft_key)
    if outcome.question is not None and disposition == "asked":
        key = keys.question(env.heinzel_id, ctx.turn, 1)
        await _local(
            ctx,
            "ask",
            key,
            "question.asked",
            {"question": outcome.question[:200]},
            short=("question",),
        )
        if ctx.woken_by in (None, "recovery"):
            return Wait(on={"kind": "answer", "key": key})
        if ctx.woken_by != "answer":
            # past max_wait (the tick ended it already when the contract says abandon):
            # the turn goes on without the answer and never waits again
            report = f"{outcome.report} (unanswered: went on without an answer)"
            return Acted(disposition, {"report": report[:200]})
    return Acted(disposition, {"report": outcome.report[:200]})
