"""The built-in ``offline`` model: deterministic rules, no network, and not AI (it says so).

A pydantic-ai ``FunctionModel`` that reads the turn hz built (the ``<turn>``
element with its ``<input>`` data and ``<done-when>`` items) and answers by rule:

- first it calls ``last_approved`` and ``report`` as tool calls;
- a drafting turn: a Markdown section with one bullet per item of each input,
  every Done-when item checked by rule;
- an approval turn (inputs ``draft`` and ``approved``): lessons from the diff;
- a discovered turn (inputs ``discovered`` and ``contract``): an amendment adding the
  source (`heinzel.engine.offline_discover`);
- a chat message asking to "also mention X from S" (`heinzel.engine.offline_amend`):
  it calls ``contract`` and proposes that input as an amendment citing the message;
- a created turn (input ``sentence``): a contract filled from a template
  (`heinzel.engine.offline_create`); a compile error sent back as a retry makes
  it try the next template.
"""

from __future__ import annotations

import difflib
import json
import re
from decimal import Decimal
from html import unescape
from typing import TYPE_CHECKING, Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from ledger.records import frozen_record

# a created turn's, a chat's amendment and a discovery's rules load with the turn that
# uses them: a scheduled or asked wake drafts without them (start-up by need)
if TYPE_CHECKING:
    from pydantic_ai.models import ModelRequestParameters
    from pydantic_ai.settings import ModelSettings

    from heinzel.engine.offline_amend import Addition

__all__ = ["NOT_AI", "ParsedTurn", "check_by_rule", "draft_items", "offline_model", "parse_turn"]

NOT_AI = "offline model (rules, not AI)"
_TURN = re.compile(
    r'<turn id="([^"]*)" cause="([^"]*)" contract="([^"]*)" version="(\d+)" '
    r'outputs="([^"]*)">'
)
_INPUT = re.compile(r'<input name="([^"]*)"[^>]*>\n(.*?)\n</input>', re.S)
_ITEM = re.compile(r"<item>(.*?)</item>", re.S)
_DUE = re.compile(r'<summary-due previous="(\w+)"/>')
_NUMBER = (
    r"\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|"
    r"fifteen|sixteen|seventeen|eighteen|nineteen|twenty"
)
_WORDS = {w: i for i, w in enumerate(_NUMBER.split("|")[1:], start=1)}
_LINES = re.compile(rf"(at most|under|no more than|fewer than) ({_NUMBER}) lines")
_BULLETS = re.compile(rf"(at most|under|no more than|fewer than) ({_NUMBER}) (?:bullets|items)")
_A_BULLET = re.compile(r"^\s*[-*+•] ", re.M)


def _limit(found: re.Match[str]) -> int:
    """The most a done-when item's "at most N" / "under N" allows (N a digit or a word)."""
    number = found.group(2)
    n = int(number) if number.isdigit() else _WORDS[number]
    return n - 1 if found.group(1) in ("under", "fewer than") else n


def bullet_limit(done_when: tuple[str, ...]) -> int | None:
    """The fewest bullets any done-when item allows ("at most eight bullets"), or None."""
    limits = [_limit(m) for item in done_when if (m := _BULLETS.search(item.lower()))]
    return min(limits) if limits else None


_MAX_ITEMS = 20
_FROM_USER = re.compile(r"^(message(-\d+)?|hint)$")
_MESSAGE = re.compile(r"^message(-\d+)?$")
"""Inputs that carry the user's words (a chat message, a retry's hint): read, not drafted from."""


@frozen_record
class ParsedTurn:
    """The parts of hz's ``<turn>`` element the rules use."""

    cause: str
    contract: str
    version: int
    outputs: tuple[str, ...]
    inputs: dict[str, str]
    done_when: tuple[str, ...]
    summary_due: bool
    previous_summary: int | None


def parse_turn(messages: list[ModelMessage]) -> ParsedTurn | None:
    """The last ``<turn>`` element in the messages (None when there is none)."""
    for message in reversed(messages):
        if not isinstance(message, ModelRequest):
            continue
        for part in reversed(message.parts):
            content = getattr(part, "content", None)
            if part.part_kind != "user-prompt" or not isinstance(content, str):
                continue
            head = _TURN.search(content)
            if head is None:
                continue
            due = _DUE.search(content)
            return ParsedTurn(
                cause=head.group(2),
                contract=unescape(head.group(3)),
                version=int(head.group(4)),
                outputs=tuple(o for o in unescape(head.group(5)).split(",") if o),
                inputs={unescape(n): unescape(v) for n, v in _INPUT.findall(content)},
                done_when=tuple(unescape(i) for i in _ITEM.findall(content)),
                summary_due=due is not None,
                previous_summary=None
                if due is None or due.group(1) == "null"
                else int(due.group(1)),
            )
    return None


def draft_items(content: str) -> list[str]:
    """An input's items: a JSON list's (or JSON lines') records described in a line each,
    or its non-empty lines without bullets."""
    records = _records(content)
    if records is not None:
        items = [" ".join(_describe(entry).split()) for entry in records]
        return [i for i in items if i][:_MAX_ITEMS]
    lines = (line.strip().lstrip("-*• ").strip() for line in content.splitlines())
    return [line for line in lines if line and not line.startswith("#")][:_MAX_ITEMS]


def _records(content: str) -> list[Any] | None:
    """The records of a JSON list, or of JSON lines; None for plain text."""
    try:
        data = json.loads(content)
    except ValueError:
        data = None
    if isinstance(data, list):
        return data
    rows = [line for line in content.splitlines() if line.strip()]
    try:
        parsed = [json.loads(line) for line in rows]
    except ValueError:
        return None
    return parsed if rows and all(isinstance(r, dict) for r in parsed) else None


def _describe(entry: Any) -> str:
    """A record as a reader would say it: its title, then what identifies it."""
    if not isinstance(entry, dict):
        return str(entry)
    title = next((str(entry[k]) for k in _TITLE_KEYS if entry.get(k)), None)
    if title is None:
        return json.dumps(entry, sort_keys=True, ensure_ascii=False)
    details = [
        f"#{entry['number']}" if entry.get("number") else None,
        entry.get("key"),
        entry.get("status"),
        entry.get("epic"),
        entry.get("author"),
    ]
    shown = ", ".join(str(d) for d in details if d)
    return f"{title} ({shown})" if shown else title


_TITLE_KEYS = ("title", "name", "subject", "summary", "text")


def _check(item: str, draft: str, counts: dict[str, int]) -> dict[str, Any]:
    lowered = item.lower()
    named = [n for n in counts if n.lower() in lowered or n.replace("_", " ") in lowered]
    limit = _LINES.search(lowered)
    bullets = _BULLETS.search(lowered)
    if limit:
        lines = len([line for line in draft.splitlines() if line.strip()])
        met = lines <= _limit(limit)
        note = f"{lines} lines"
    elif bullets:  # counted, never "met" whatever their number
        count = len(_A_BULLET.findall(draft))
        met = count <= _limit(bullets)
        note = f"{count} bullets, at most {_limit(bullets)}"
    elif named:
        met = all(counts[n] > 0 for n in named)
        note = ", ".join(f"{counts[n]} items from {n}" for n in named)
    else:
        met = sum(counts.values()) > 0
        note = f"{sum(counts.values())} bullets in the draft"
    return {"item": item, "met": met, "note": f"checked by rule: {note}"}


def _draft_outcome(turn: ParsedTurn) -> dict[str, Any]:
    counts: dict[str, int] = {}
    lines = [f"## {turn.contract}", ""]
    found = {
        name: draft_items(content)
        for name, content in turn.inputs.items()
        if not _FROM_USER.match(name)
    }
    kept = _within(found, bullet_limit(turn.done_when))
    for name, items in kept.items():
        counts[name] = len(items)
        if items:
            lines += [f"### {name}", *[f"- {i}" for i in items], ""]
    if not any(counts.values()):
        return {
            "report": f"{NOT_AI}: no input had any items",
            "nothing_to_do": True,
            "reason": "no input had any items",
        }
    if not turn.outputs:  # nothing declared to place a draft in: nothing to draft
        return {
            "report": f"{NOT_AI}: the contract has no output to draft into",
            "nothing_to_do": True,
            "reason": "the contract has no output to draft into",
        }
    text = "\n".join(lines).rstrip() + "\n"
    return {
        "report": f"{NOT_AI}: drafted {_count(sum(counts.values()), 'bullet')} from "
        f"{_count(len(counts), 'input')}",
        "draft": {
            "text": text,
            "output": turn.outputs[0],
            "contract_version": turn.version,
            "done_when": [_check(item, text, counts) for item in turn.done_when],
        },
    }


def _within(found: dict[str, list[str]], limit: int | None) -> dict[str, list[str]]:
    """Each input's items, at most ``limit`` in all (the contract's "at most N bullets"),
    taken in turns from each input so every input with items keeps its first ones."""
    if limit is None or sum(len(items) for items in found.values()) <= limit:
        return found
    kept: dict[str, list[str]] = {name: [] for name in found}
    taken, depth = 0, 0
    while taken < limit:
        more = False
        for name, items in found.items():
            if depth < len(items) and taken < limit:
                kept[name].append(items[depth])
                taken += 1
                more = True
        if not more:
            break
        depth += 1
    return kept


def _lessons_outcome(turn: ParsedTurn) -> dict[str, Any]:
    drafted = turn.inputs.get("draft", "").splitlines()
    approved = turn.inputs.get("approved", "").splitlines()
    hunks = ["\n".join(h) for h in _hunks(drafted, approved)]
    lessons: list[dict[str, Any]] = []
    heads_d = [line for line in drafted if line.startswith("#")]
    heads_a = [line for line in approved if line.startswith("#")]
    if set(heads_d) == set(heads_a) and heads_d != heads_a:
        first = next(h for h, g in zip(heads_a, heads_d, strict=True) if h != g)
        below = heads_a[heads_a.index(first) + 1]
        sentence = f"{first.lstrip('# ')} goes above {below.lstrip('# ')}"
        lessons.append({"sentence": sentence, "hunks": hunks[:2]})
    removed = [line for line in drafted if line.strip() and line not in approved]
    added = [line for line in approved if line.strip() and line not in drafted]
    if removed:
        lessons.append(
            {"sentence": f"leave out lines like: {removed[0].strip()[:120]}", "hunks": hunks[:2]}
        )
    if added:
        lessons.append(
            {"sentence": f"include lines like: {added[0].strip()[:120]}", "hunks": hunks[:2]}
        )
    if not lessons:
        return {
            "report": f"{NOT_AI}: approved as drafted, nothing to learn",
            "nothing_to_do": True,
            "reason": "approved as drafted",
        }
    return {
        "report": f"{NOT_AI}: {_count(len(lessons), 'lesson')} from the approved edits",
        "lessons": lessons,
    }


def _hunks(a: list[str], b: list[str]) -> list[list[str]]:
    hunks: list[list[str]] = []
    for line in difflib.unified_diff(a, b, lineterm="", n=0):
        if line.startswith("@@"):
            hunks.append([line])
        elif hunks:
            hunks[-1].append(line)
    return hunks


def _created_outcome(turn: ParsedTurn, attempt: int) -> dict[str, Any]:
    from heinzel.engine.offline_create import fill_contract

    filled = fill_contract(turn.inputs.get("sentence", ""), attempt)
    assumed = f"; assumed {', '.join(filled.assumed)}" if filled.assumed else ""
    return {
        "report": f"{NOT_AI}: filled the {filled.template!r} contract template from the sentence",
        "amendment": {
            "text": filled.text,
            "why": f"{NOT_AI}: filled the template {filled.template!r} by rule{assumed}"[:300],
        },
    }


def _discovered(turn: ParsedTurn) -> dict[str, Any] | None:
    from heinzel.engine.offline_discover import discovered_outcome

    return discovered_outcome(turn.inputs, NOT_AI)


def _asked_addition(turn: ParsedTurn) -> tuple[str, Addition] | None:
    """The last message input that asks to "also mention X from S", and what it asks."""
    said = [(name, content) for name, content in turn.inputs.items() if _MESSAGE.match(name)]
    if not said:
        return None
    from heinzel.engine.offline_amend import addition

    found = None
    for name, content in said:
        if (add := addition(content)) is not None:
            found = (name, add)
    return found


def _amendment_outcome(
    messages: list[ModelMessage], asks: tuple[str, Addition] | None
) -> dict[str, Any] | None:
    """The amendment a chat message asked for, built on the ``contract`` tool's text and
    citing that message (None: nothing asked, or the text has no place for it)."""
    if asks is None:
        return None
    from heinzel.engine.offline_amend import amended

    returned = [
        str(p.content)
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if p.part_kind == "tool-return" and getattr(p, "tool_name", "") == "contract"
    ]
    name, add = asks
    text = amended(returned[-1], add) if returned else None
    if text is None:
        return None
    return {
        "report": f"{NOT_AI}: proposed input {add.name} as the user asked in chat",
        "amendment": {
            "text": text,
            "why": f"{NOT_AI}: the user asked in chat for {add.name} ({add.requires})",
            "asked_in": name,
        },
    }


def _summary(turn: ParsedTurn) -> dict[str, Any]:
    return {
        "asset": ", ".join(turn.outputs) or turn.contract,
        "wants": f"keep {turn.contract} true",
        "decisions": [],
        "open_questions": [],
        "next_deadline": None,
        "sources": sorted(turn.inputs) or ["none"],
        "previous": turn.previous_summary,
    }


def _retries(messages: list[ModelMessage]) -> int:
    return sum(
        1
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if p.part_kind == "retry-prompt" or getattr(p, "outcome", None) == "retried"
    )


def _respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    turn = parse_turn(messages)
    step = sum(isinstance(m, ModelResponse) for m in messages)
    usage = RequestUsage(input_tokens=0, output_tokens=0)
    called = {
        getattr(p, "tool_name", "")
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if p.part_kind == "tool-return"
    }
    offered = {t.name for t in info.function_tools}
    asks = _asked_addition(turn) if turn is not None and "contract" in offered else None
    wanted = ("last_approved", "report", "contract") if asks else ("last_approved", "report")
    first = [n for n in wanted if n in offered and n not in called]
    if turn is not None and first:
        calls: list[ToolCallPart] = []
        for name in first:
            args: dict[str, Any] = {}
            if name == "report":
                args = {
                    "verb": "read",
                    "target": turn.contract,
                    "description": f"{NOT_AI} read {_count(len(turn.inputs), 'input')}",
                }
            calls.append(ToolCallPart(name, args, tool_call_id=f"o{step}-{len(calls)}"))
        return ModelResponse(parts=calls, usage=usage, model_name="offline")
    if turn is None:
        outcome: dict[str, Any] = {
            "report": f"{NOT_AI}: no turn found",
            "nothing_to_do": True,
            "reason": "the messages hold no <turn> element",
        }
    elif turn.cause == "created":
        outcome = _created_outcome(turn, _retries(messages))
    elif turn.cause == "approval" and "approved" in turn.inputs:
        outcome = _lessons_outcome(turn)
    elif turn.cause == "discovered" and (found := _discovered(turn)):
        outcome = found
    else:
        outcome = _amendment_outcome(messages, asks) or _draft_outcome(turn)
    if turn is not None and turn.summary_due:
        if outcome.get("nothing_to_do"):
            outcome = {"report": outcome["report"]}
        outcome["summary"] = _summary(turn)
    tool = info.output_tools[0].name if info.output_tools else "final_result"
    return ModelResponse(
        parts=[ToolCallPart(tool, outcome, tool_call_id=f"o{step}-out")],
        usage=usage,
        model_name="offline",
    )


class _PricesOnFirstUse:
    """genai-prices' snapshot whose bundled price table loads when a price is first looked
    up. pydantic-ai loads the whole table when any ``Model`` is made (its
    ``preload_pricing_data``): about 127 M instructions, more than a ``python -c pass``,
    which a turn on the free ``offline`` model never reads. Every lookup goes to the same
    bundled snapshot as before, so a paid model in the same process is priced alike."""

    def __getattr__(self, name: str) -> Any:
        from genai_prices.data_snapshot import _bundled_snapshot

        return getattr(_bundled_snapshot(), name)


def _defer_price_table() -> None:
    """Install `_PricesOnFirstUse` unless a snapshot is set (genai-prices' own updater)."""
    from genai_prices import data_snapshot

    if data_snapshot._custom_snapshot is None:
        data_snapshot.set_custom_snapshot(_PricesOnFirstUse())  # type: ignore[arg-type]


class _FreeModel(FunctionModel):
    """The offline model's responses carry their cost, nothing: pydantic-ai then looks no
    price up for them (``fill_response_cost`` keeps a cost that is set). hz's own spend
    is `heinzel.engine.money`'s (free for ``offline``), as before."""

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        response = await super().request(messages, model_settings, model_request_parameters)
        response.usage.cost = Decimal(0)
        return response


def offline_model() -> FunctionModel:
    """hz's deterministic model, named ``offline`` (free, no network, not AI)."""
    _defer_price_table()
    # its context window is none (genai-prices knows no ``function`` model): said here, so
    # that pydantic-ai does not load the price table to find that out
    return _FreeModel(_respond, model_name="offline", profile={"context_window": None})


def check_by_rule(item: str, draft: str, inputs: dict[str, str]) -> dict[str, Any]:
    """A Done-when item checked on ``draft`` by the rules the offline model checks its own
    drafts by (a line limit; the inputs it names have items in the draft), whoever wrote
    the draft: an input's items count when their words are in it (`hz heinzel try`)."""
    lowered = draft.lower()
    counts = {
        name: sum(1 for one in draft_items(content) if one.lower() in lowered)
        for name, content in inputs.items()
        if not _FROM_USER.match(name)
    }
    if not counts:  # no input: a bullet counts for the item
        counts = {"": sum(1 for line in draft.splitlines() if line.lstrip().startswith("-"))}
    return _check(item, draft, counts)


def _count(n: int, noun: str) -> str:
    """``1 input``, ``3 inputs``: a count as a person writes it."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
