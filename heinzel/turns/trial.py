"""`hz heinzel try`: the last turns thought again under a proposed contract, model or
lesson set, side by side with what was placed (docs/try.md).

A trial reads each of the last K turns from the record: the gathered inputs its think
step started from and the outcome it thought (both in the turn's body), and runs
`heinzel.engine.think` again on those inputs under the proposed version (default: the
pending amendment, else the approved one), model or lessons. Nothing of a turn is
written: no ``turn.started``, no step lines, no body records, no effect. Act is replaced
by a report of what the outcome would have done. The model requests are real: each is
checked against the caps under the home's spend lock before it is sent (the day's cap,
and the trial's own ``--max-usd``), and each is recorded once it is answered as a
``usage {kind: trial}`` line outside any turn, which the caps and ``show`` count like any
other spend. The proposed version's done-when items are scored by rule on the placed and
the tried draft alike (`heinzel.engine.offline.check_by_rule`).
"""

from __future__ import annotations

import asyncio
import difflib
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any, cast

from heinzel.contract import compile_contract
from heinzel.contract.source import split
from heinzel.engine.context import build_context
from heinzel.engine.errors import EngineError
from heinzel.engine.money import Budget, Purse, turn_cap
from heinzel.engine.spec import Cause, InputSpec, LessonView, SpineView, TurnSpec
from heinzel.engine.tools import NONE_YET
from heinzel.errors import HeinzelError
from heinzel.ids import ID_PREFIX, new_id
from heinzel.session.spend import turn_spend
from heinzel.strings.usd import usd_text
from heinzel.turns.inputs import recent_bodies
from ledger.bodies import Bodies
from ledger.errors import LedgerError
from ledger.event import parse_ts
from ledger.spine import read_events
from machines.stores.disk_body import DiskBody
from machines.stores.journal import expand_carried

if TYPE_CHECKING:
    from heinzel.session.sessions import Sessions
    from heinzel.turns.host import TurnHost
    from ledger.event import Event

__all__ = ["TRIAL", "proposed", "run_trial"]

TRIAL = "trial"
"""The ``usage`` line's ``kind`` for a trial's model request (docs/spine.md)."""

_ENDED = ("turn.finished", "turn.skipped")
_DRAFTING = ("schedule", "source-changed", "stale", "retry")
"""The causes of the turns that draft the output; a trial thinks those again, and any
other turn that drafted (a wake, a chat that asked for a draft), never an approval's or a
creation's (one learns, the other writes the contract)."""
_NEVER = ("approval", "created")


@dataclass
class _Past:
    """One past turn as the spine recorded it."""

    turn: str
    seq: int
    at: str
    cause: str
    think: str | None = None
    outcome: str | None = None
    ended: str | None = None
    disposition: str | None = None
    events: list[Event] = field(default_factory=list)


class _TrialRecorder:
    """The engine's recorder for a trial: no turn line and no body record is written.
    Each paid request is reserved on the spine before it is sent, as a turn's is
    (``model.reserved {usd, kind: trial, trial, of}`` outside any turn, fsynced under the
    home's spend lock: `reservation`, the `Purse`'s writer), and settled by one
    ``usage {kind: trial, trial, of}`` line once it is answered (or let go by
    ``model.released {kind: trial, trial, of}`` when it provably cost nothing). A
    reservation neither follows (the trial was killed while the provider held the
    request) counts in full, in the index's day spend and in ``show`` (docs/try.md)."""

    def __init__(
        self, sessions: Sessions, heinzel_id: str, turn: str, left: Decimal, trial: str
    ) -> None:
        self.sessions = sessions
        self.heinzel_id = heinzel_id
        self.turn = turn
        self.left = left
        self.trial = trial
        self.usd = Decimal(0)
        self.open = Decimal(0)
        """The reservation of the request under way (zero once settled or let go)."""
        self.requests = 0

    def spent(self) -> Decimal:
        """The trial's spend on this turn so far: its requests and its open reservation."""
        return self.usd + self.open

    def reservation(self, kind: str, data: Mapping[str, Any]) -> None:
        """The `Purse`'s writer: ``model.reserved`` before a request, ``model.released``
        after one that cost nothing, each a durable line outside any turn."""
        line = {**data, "kind": TRIAL, "trial": self.trial, "of": self.turn}
        self.sessions.append(self.heinzel_id, kind, line)
        self.open = Decimal(str(data.get("usd") or 0)) if kind == "model.reserved" else Decimal(0)

    def checkpoint(self, kind: str, data: Mapping[str, Any]) -> None:
        if kind != "step.model":
            return
        raw = data.get("usd")
        usd = self.left - self.usd if raw == "cap" else Decimal(str(raw or 0))
        self.usd += usd
        self.open = Decimal(0)
        self.requests += 1
        tokens = int(data.get("in") or 0) + int(data.get("out") or 0)
        line = {
            "kind": TRIAL,
            "usd": float(usd),
            "tokens": tokens,
            "tokens_cached": int(data.get("cached") or 0),
            "of": self.turn,
            "trial": self.trial,
        }
        self.sessions.append(self.heinzel_id, "usage", line)

    def body(self, record: Mapping[str, Any]) -> str:
        digest = hashlib.sha256(json.dumps(record, sort_keys=True, default=str).encode())
        return "sha256:" + digest.hexdigest()

    def durable(self) -> None:
        return None


def _past_turns(events: Sequence[Event]) -> list[_Past]:
    """Every turn that reached think, oldest first, with what the spine says of it."""
    turns: dict[str, _Past] = {}
    for event in expand_carried(events):
        if event.kind == "turn.started" and event.turn:
            cause = str(event.data.get("cause") or "")
            turns[event.turn] = _Past(event.turn, event.seq, event.ts, cause)
        past = turns.get(event.turn or "")
        if past is None:
            continue
        past.events.append(event)
        step = event.data.get("step") if event.kind == "step.started" else None
        if step == "think" and isinstance(event.data.get("input"), str):
            past.think = past.think or str(event.data["input"])
        elif step == "outcome" and isinstance(event.data.get("input"), str):
            past.outcome = past.outcome or str(event.data["input"])
        elif event.kind in _ENDED:
            past.ended = event.ts
            past.disposition = str(
                event.data.get("disposition") or event.data.get("reason") or "skipped"
            )
    return [p for p in turns.values() if p.think and p.ended and p.cause not in _NEVER]


def _recorded(records: Sequence[Mapping[str, Any]], tool: str) -> str | None:
    """What ``tool`` answered the old turn, from its body's messages (None: never called)."""
    for record in records:
        if record.get("kind") != "messages":
            continue
        for message in record.get("messages") or []:
            for part in message.get("parts") or []:
                if part.get("part_kind") == "tool-return" and part.get("tool_name") == tool:
                    content = part.get("content")
                    return content if isinstance(content, str) else json.dumps(content)
    return None


def _calls(records: Sequence[Mapping[str, Any]]) -> list[tuple[str, Any, str]]:
    """Each tool call the old turn made, from its body's messages: the tool, its arguments
    and what it answered (as text)."""
    asked: dict[str, tuple[str, Any]] = {}
    out: list[tuple[str, Any, str]] = []
    for record in records:
        if record.get("kind") != "messages":
            continue
        for message in record.get("messages") or []:
            for part in message.get("parts") or []:
                kind, call = part.get("part_kind"), str(part.get("tool_call_id") or "")
                if kind == "tool-call":
                    args = part.get("args")
                    if isinstance(args, str):
                        try:
                            args = json.loads(args or "{}")
                        except ValueError:
                            args = {}
                    asked[call] = (str(part.get("tool_name")), args)
                elif kind == "tool-return" and call in asked:
                    content = part.get("content")
                    text = content if isinstance(content, str) else json.dumps(content)
                    out.append((*asked[call], text))
    return out


def _search_args(method: str, window: str | None, args: Any) -> tuple[str, str, str]:
    """A search call's arguments, as the tool fills its defaults (``7d``, no args)."""
    given = args if isinstance(args, Mapping) else {}
    return (str(method), str(window or "7d"), json.dumps(dict(given), sort_keys=True))


class _TrialSearch:
    """A capability's ``search_<name>`` tool in a trial: a call the recorded turn made
    answers what it answered then (from its body); one it never made answers from the
    source cache when the cache holds that source (capability, method, args, window), and
    is refused as unavailable otherwise; nothing is fetched unless ``live``, which fetches
    every call now. Each answer's origin is kept for the report (``tools``)."""

    def __init__(
        self,
        capability: Any,
        calls: Sequence[tuple[str, Any, str]],
        cache: Any,
        *,
        live: bool,
        answered: list[dict[str, Any]],
    ) -> None:
        from heinzel.engine.tools import tool_name

        self._capability = capability
        self._tool = tool_name("search", capability.name)
        self._recorded = {
            _search_args(a.get("method", ""), a.get("window"), a.get("args")): text
            for tool, a, text in calls
            if tool == self._tool and isinstance(a, Mapping)
        }
        self._cache = cache
        self._live = live
        self._answered = answered

    @property
    def name(self) -> str:
        return str(self._capability.name)

    @property
    def methods(self) -> Any:
        return self._capability.methods

    async def search(self, method: str, args: Mapping[str, str], window: str) -> Any:
        from heinzel.contract.types import parse_duration
        from heinzel.store.sources import source_key
        from heinzel.turns.inputs import render_input

        said = {"tool": self._tool, "method": method, "window": window, "args": dict(args)}
        if self._live:
            self._answered.append({**said, "answered": "live"})
            return await self._capability.search(method, args, window)
        recorded = self._recorded.get(_search_args(method, window, args))
        if recorded is not None:
            self._answered.append({**said, "answered": "record"})
            return recorded
        key = source_key(self.name, method, dict(args), parse_duration(window))
        cached = self._cache.get(key)
        if cached is not None:
            self._answered.append({**said, "answered": "cache"})
            return render_input(cached.result)
        self._answered.append({**said, "answered": "unavailable"})
        return (
            f"unavailable: {self._tool}({method}, {window}) was not called by the turn "
            "tried again and the source cache does not hold it; a trial fetches nothing "
            "(`hz heinzel try --live` would)"
        )


def _placed_text(past: _Past, thought: Any) -> str | None:
    """The draft the turn placed (None: it placed none)."""
    if past.disposition != "drafted" or not isinstance(thought, dict):
        return None
    outcome = thought.get("outcome") or {}
    draft = outcome.get("draft") if isinstance(outcome, dict) else None
    return str(draft["text"]) if isinstance(draft, dict) and draft.get("text") else None


def _checks(items: Sequence[str], text: str | None, inputs: Sequence[InputSpec]) -> list[Any]:
    from heinzel.engine.offline import check_by_rule

    if text is None:
        return [{"item": item, "met": None, "note": "no draft"} for item in items]
    contents = {i.name: i.content for i in inputs}
    return [check_by_rule(item, text, contents) for item in items]


def _met(checks: Sequence[Mapping[str, Any]]) -> int:
    return sum(1 for check in checks if check.get("met") is True)


def _would(outcome: Mapping[str, Any] | None, disposition: Mapping[str, Any]) -> list[str]:
    """What act would have done with the tried outcome, in words."""
    if outcome is None:
        return []
    said: list[str] = []
    for act in disposition.get("acts") or []:
        if act == "place_draft":
            draft = outcome.get("draft") or {}
            said.append(f"place the draft in {draft.get('output')}")
        elif act == "record_lesson":
            said.append("record a lesson")
        elif act == "propose_amendment":
            said.append("propose an amendment")
        elif act == "ask":
            said.append(f"ask: {outcome.get('question')}")
        elif act == "write_summary":
            said.append("write a summary")
    if disposition.get("disposition") == "skipped":
        unmet = ", ".join(disposition.get("unmet") or [])
        reason = disposition.get("reason") or "skipped"
        said.append(f"place nothing ({reason}{': ' + unmet if unmet else ''})")
    return said


def proposed(sessions: Sessions, row: Mapping[str, Any], version: int | None) -> int:
    """The version to try: the one asked for, else the pending amendment's, else the
    approved one (HZH500 when the asked one does not exist)."""
    heinzel_id = str(row["id"])
    if version is None:
        pending = sessions.queries.pending_amendment(heinzel_id)
        if pending is not None:
            return int(pending["version"])
        if row["contract_version"] is None:
            raise HeinzelError(
                "HZH501",
                f"{row['name']} has no approved contract version and no amendment to try",
                f"approve it first: `hz approve {row['name']}`",
            )
        return int(row["contract_version"])
    if not sessions.home.contract_text_path(heinzel_id, version).is_file():
        raise HeinzelError(
            "HZH500",
            f"{row['name']} has no contract version {version}",
            f"`hz heinzel show {row['name']}` lists its versions; give one of them to --version",
        )
    return version


def run_trial(
    sessions: Sessions,
    host: TurnHost,
    ref: str,
    *,
    adapters: Mapping[str, object],
    version: int | None = None,
    model: str | None = None,
    without_lesson: str | None = None,
    turns: int = 5,
    max_usd: Decimal | None = None,
    live: bool = False,
) -> dict[str, Any]:
    """Try the last ``turns`` turns of ``ref`` again under the proposed version, model or
    lessons, and compare; the answer ``hz heinzel try --json`` prints."""
    row = sessions.resolve(ref, write=True)
    heinzel_id, name = str(row["id"]), str(row["name"])
    tried_version = proposed(sessions, row, version)
    text = sessions.home.contract_text_path(heinzel_id, tried_version).read_text(encoding="utf-8")
    contract = compile_contract(text, source=f"v{tried_version}")
    items = tuple(contract.body.done_when)
    session_dir = sessions.home.session_dir(heinzel_id)
    days = sessions.settings.heinzel.retention_days
    pasts = _past_turns(list(read_events(sessions.home.spine_path(heinzel_id))))
    body = DiskBody(Bodies(session_dir))
    chosen: list[tuple[_Past, Any, Any]] = []
    expired: list[dict[str, Any]] = []
    for past in reversed(pasts):
        if len(chosen) >= turns:
            break
        if past.cause not in _DRAFTING and past.disposition != "drafted":
            continue  # a chat's answer or a proposal: no draft to compare
        try:
            gathered = body.get(past.turn, str(past.think))
            thought = body.get(past.turn, str(past.outcome)) if past.outcome else None
        except (KeyError, OSError, ValueError, LedgerError):
            gathered = None
        if not isinstance(gathered, dict) or not isinstance(gathered.get("inputs"), list):
            when = parse_ts(str(past.ended)) + timedelta(days=days) if days else None
            expired.append(
                {
                    "turn": past.turn,
                    "at": past.at,
                    "expired": None if when is None else when.isoformat(),
                    "why": "its body is gone (retention_days)"
                    if (session_dir / "turns" / f"{past.turn}.jsonl").exists() is False
                    else "its gathered inputs are not in its body",
                }
            )
            continue
        chosen.append((past, gathered, thought))
    chosen.reverse()
    with sessions.hold_spine(heinzel_id) as spine:
        documents = {k: v for k, v in adapters.items() if k == "documents"}
        env = host._env(  # no configured model is made when another is tried
            heinzel_id, spine, "schedule", documents, extra=(), slot="trial", past_think=bool(model)
        )
        from heinzel.turns.inputs import search_capabilities

        searches = search_capabilities(contract, adapters, sessions.clock())
        lessons: list[LessonView] = list(env.lessons)
        if without_lesson is not None:
            kept = [one for one in lessons if str(one.id) != str(without_lesson)]
            if len(kept) == len(lessons):
                raise HeinzelError(
                    "HZH502",
                    f"{name} has no active lesson {without_lesson}",
                    f"`hz heinzel lessons {name}` lists them by number",
                )
            lessons = kept
        if model is not None:
            from heinzel.turns.models import named_model

            engine_model = named_model(sessions, model)
        else:
            engine_model = env.model
        contract_cap = (
            None if contract.hz.agent.max_usd is None else Decimal(str(contract.hz.agent.max_usd))
        )
        per_turn = turn_cap(contract_cap, env.settings_max_usd)
        cap = max_usd if max_usd is not None else (per_turn or Decimal(0)) * max(len(chosen), 1)
        spent = Decimal(0)
        results = []
        trial = "tr-" + new_id(sessions.clock)[len(ID_PREFIX) :]
        for past, gathered, thought in chosen:
            left = cap - spent
            tried = _try_one(
                sessions,
                host,
                env,
                heinzel_id=heinzel_id,
                past=past,
                gathered=gathered,
                thought=thought,
                contract=contract,
                text=text,
                version=tried_version,
                items=items,
                lessons=lessons,
                model=engine_model,
                left=left,
                trial=trial,
                searches=searches,
                live=live,
            )
            spent += Decimal(str(tried["tried_usd"]))
            results.append(tried)
    better = sum(1 for r in results if r["verdict"] == "better")
    worse = sum(1 for r in results if r["verdict"] == "worse")
    same = sum(1 for r in results if r["verdict"] == "same")
    not_tried = len(results) - better - worse - same
    spend = f"spent {usd_text(float(spent))} USD of {usd_text(float(cap))} USD"
    if not results and not expired:
        summary = f"no turn tried under v{tried_version}: none drafted yet; {spend}"
    else:
        tried_count = "1 turn" if len(results) == 1 else f"{len(results)} turns"
        summary = (
            f"{tried_count} tried under v{tried_version}: {better} better, {worse} worse, "
            f"{same} same by its done-when checks"
            + (f", {not_tried} not tried" if not_tried else "")
            + (f"; {len(expired)} expired" if expired else "")
            + f"; {spend}"
        )
    return {
        "name": name,
        "version": tried_version,
        "model": engine_model.model_name if model is None else model,
        "without_lesson": without_lesson,
        "live": live,
        "done_when": list(items),
        "turns": results,
        "expired": expired,
        "usd": float(spent),
        "max_usd": float(cap),
        "summary": summary,
    }


def _try_one(
    sessions: Sessions,
    host: TurnHost,
    env: Any,
    *,
    heinzel_id: str,
    past: _Past,
    gathered: Mapping[str, Any],
    thought: Any,
    contract: Any,
    text: str,
    version: int,
    items: Sequence[str],
    lessons: Sequence[LessonView],
    model: Any,
    left: Decimal,
    trial: str,
    searches: Sequence[Any] = (),
    live: bool = False,
) -> dict[str, Any]:
    """Think one past turn again; its placed and tried drafts, checks, costs, verdict."""
    from heinzel.engine.run import think
    from heinzel.engine.tools import TurnServices

    inputs = tuple(
        InputSpec(str(i.get("name")), str(i.get("content") or ""), str(i.get("source") or ""))
        for i in gathered["inputs"]
    )
    placed = _placed_text(past, thought)
    placed_checks = _checks(items, placed, inputs)
    answer: dict[str, Any] = {
        "turn": past.turn,
        "at": past.at,
        "cause": past.cause,
        "placed_disposition": past.disposition,
        "placed": placed,
        "placed_usd": round(turn_spend(past.events), 9),
        "placed_checks": placed_checks,
    }
    if left <= 0:
        return {
            **answer,
            "status": "cap",
            "verdict": "not tried",
            "tried": None,
            "tried_usd": 0.0,
            "tried_checks": [],
            "would": [],
            "tools": [],
            "diff": "",
            "error": "the trial's cap is reached",
        }
    spec = TurnSpec(
        turn=past.turn,
        cause=cast(Cause, past.cause or "schedule"),
        contract_name=env.name,
        contract_version=version,
        body=split(text, source="contract").body,
        started_at=datetime.fromisoformat(str(gathered.get("started_at") or past.at)),
        inputs=inputs,
        outputs=tuple(contract.hz.outputs),
        done_when=tuple(items),
        max_usd=left,
        model_class=contract.hz.agent.model_class,
    )
    view = SpineView(records=tuple(r for r in env.view.records if r.seq < past.seq))
    keep = sessions.settings.heinzel.summary_keep_turns
    bodies = Bodies(sessions.home.session_dir(heinzel_id))
    # a tool the old turn called answers as it did then; one it never called, from now
    records = bodies.read(past.turn) or []
    said = _recorded(records, "last_approved")
    approved = env.last_approved if said is None else (None if said == NONE_YET else said)
    context = build_context(
        spec,
        view,
        bodies=recent_bodies(bodies, view, keep),
        lessons=lessons,
        skills=env.skills,
        last_approved=approved,
        settings=env.context_settings,
    )
    recorder = _TrialRecorder(sessions, heinzel_id, past.turn, left, trial)
    budget = Budget(env.pricing, left, env.day_usd, host._spent_today(heinzel_id))
    purse = Purse(budget, recorder.spent, recorder.reservation, hold=env.hold_day)
    from heinzel.store.sources import SourceCache

    calls, cache = _calls(records), SourceCache.of(sessions.home)
    tools: list[dict[str, Any]] = []
    services = TurnServices(
        view=view,
        last_approved=approved,
        contract_text=text,
        lessons=lessons,
        capabilities=[
            _TrialSearch(one, calls, cache, live=live, answered=tools) for one in searches
        ],
    )
    try:
        result = asyncio.run(
            think(
                spec,
                context,
                model=model,
                recorder=recorder,
                budget=budget,
                services=services,
                purse=purse,
                time_left=contract.hz.timeout.total_seconds(),
            )
        )
    except EngineError as error:
        return {
            **answer,
            "status": "cap" if error.code == "HZE005" else "failed",
            "verdict": "not tried",
            "tried": None,
            "tried_usd": float(recorder.spent()),  # a reservation a paid failure left counts
            "tried_checks": [],
            "would": [],
            "tools": tools,
            "diff": "",
            "error": f"{error.code}: {error.message}",
        }
    outcome = None if result.outcome is None else result.outcome.model_dump(mode="json")
    draft = (outcome or {}).get("draft") or {}
    tried = str(draft["text"]) if draft.get("text") else None
    tried_checks = _checks(items, tried, inputs) if result.status == "outcome" else []
    disposition = {
        "disposition": result.disposition.disposition,
        "reason": result.disposition.reason,
        "unmet": list(result.disposition.unmet),
        "acts": list(result.disposition.acts),
    }
    would = _would(outcome, disposition)
    would += [f"{r.verb} {r.target}: {r.description}" for r in result.reports]
    if result.status != "outcome":
        verdict = "not tried"
    else:
        a, b = _met(placed_checks), _met(tried_checks)
        verdict = "better" if b > a else "worse" if b < a else "same"
    diff = "".join(
        difflib.unified_diff(
            (placed or "").splitlines(keepends=True),
            (tried or "").splitlines(keepends=True),
            f"placed ({past.turn})",
            f"tried (v{version})",
        )
    )
    return {
        **answer,
        "status": result.status,
        "verdict": verdict,
        "tried": tried,
        "tried_disposition": disposition["disposition"],
        "tried_usd": float(recorder.usd),
        "requests": recorder.requests,
        "tried_checks": tried_checks,
        "would": would,
        "tools": tools,
        "diff": diff,
        "error": result.error,
    }
