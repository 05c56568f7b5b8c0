"""What the page shows of one turn, from its spine lines and its body while it exists (what
it read, the model's messages, the tools it called, the draft, why it failed), and the proposed
writes still waiting for the user's answer. Only reads; the template escapes every text."""

from __future__ import annotations

import contextlib
import json
from typing import Any

from heinzel.app import App
from heinzel.session.causes import cause_of
from heinzel.session.questions import open_questions as asked_questions
from heinzel.strings.waits import asks, draft_waits, may_it_run
from ledger.bodies import Bodies
from ledger.reading import read_events
from machines.stores.journal import expand_carried

__all__ = ["open_questions", "turn_detail"]

CLIP = 20_000
"""At most this many characters of one text are shown (the body keeps all of it)."""


def _clip(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=1)
    return text if len(text) <= CLIP else text[:CLIP] + f"\n… ({len(text) - CLIP} more characters)"


def _calls(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each tool call in the body's messages, by its call id."""
    found: dict[str, dict[str, Any]] = {}
    for record in records:
        for message in record.get("messages") or []:
            for part in message.get("parts") or [] if isinstance(message, dict) else []:
                if isinstance(part, dict) and part.get("part_kind") == "tool-call":
                    args = part.get("args")
                    if isinstance(args, str):
                        with contextlib.suppress(ValueError):
                            args = json.loads(args)
                    found[str(part.get("tool_call_id"))] = {
                        "tool": part.get("tool_name"),
                        "args": args,
                    }
    return found


def open_questions(app: App, heinzel_id: str) -> list[dict[str, Any]]:
    """The writes proposed in chat turns and not yet answered, oldest first, each with the
    tool, its reason (from the turn's body, while it exists) and the turn."""
    service = app.service
    bodies = Bodies(service.home.session_dir(heinzel_id))
    found = []
    for event in asked_questions(service, heinzel_id):
        proposal = str(event.data["proposal"])
        call = _calls(bodies.read(str(event.turn)) or []).get(proposal, {})
        args = call.get("args")
        tool = event.data.get("tool") or call.get("tool")
        found.append(
            {
                "proposal": proposal,
                "tool": tool,
                "said": asks(may_it_run(str(tool or "a write"))),
                "reason": args.get("reason") if isinstance(args, dict) else None,
                "turn": event.turn,
                "ts": event.ts,
            }
        )
    return found


def _message_parts(records: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The model conversation, each part once (a body records the messages of each request)."""
    shown: list[dict[str, str]] = []
    seen: set[str] = set()
    for record in records:
        if record.get("kind") != "messages":
            continue
        for message in record.get("messages") or []:
            if not isinstance(message, dict):
                continue
            for part in message.get("parts") or []:
                if not isinstance(part, dict):
                    continue
                kind = str(part.get("part_kind", "?"))
                if kind == "tool-call":
                    text = f"{part.get('tool_name')}({_clip(part.get('args'))})"
                elif kind == "tool-return":
                    text = f"{part.get('tool_name')} → {_clip(part.get('content'))}"
                else:
                    text = _clip(part.get("content"))
                mark = json.dumps([kind, text], ensure_ascii=False)
                if mark not in seen:
                    seen.add(mark)
                    shown.append({"kind": kind, "text": text})
    return shown


def turn_detail(app: App, heinzel_id: str, turn: str) -> dict[str, Any] | None:
    """The turn's spine lines and, while its body exists, what it read, the conversation, the
    tools it called and the draft; ``expired`` once the body is gone. None: no such turn."""
    path = app.service.home.spine_path(heinzel_id)
    lines = [
        {"seq": e.seq, "ts": e.ts, "kind": e.kind, "data": e.data}
        for e in expand_carried(read_events(path))  # what a line carries, as lines
        if e.turn == turn
    ]
    if not lines:
        return None
    records = Bodies(app.service.home.session_dir(heinzel_id)).read(turn)
    detail: dict[str, Any] = {"turn": turn, "lines": lines, "expired": records is None}
    detail["failure"] = cause_of(app.service.home.session_dir(heinzel_id), turn)
    if records is None:
        return detail
    values = [r.get("value") for r in records if r.get("kind") == "value"]
    detail["inputs"] = [
        {"name": i.get("name"), "source": i.get("source"), "content": _clip(i.get("content"))}
        for v in values
        if isinstance(v, dict)
        for i in v.get("inputs") or []
        if isinstance(i, dict)
    ]
    detail["messages"] = _message_parts(records)
    detail["tools"] = [m["text"] for m in detail["messages"] if m["kind"] == "tool-call"]
    drafts = [
        v["outcome"]["draft"]
        for v in values
        if isinstance(v, dict)
        and isinstance(v.get("outcome"), dict)
        and isinstance(v["outcome"].get("draft"), dict)
    ]
    detail["draft"] = _clip(drafts[-1].get("text", "")) if drafts else None
    return detail


def pending_drafts(app: App, heinzel_id: str) -> list[dict[str, Any]]:
    """Each draft waiting for approval (oldest first) with its text, from the body of the
    turn that drafted it (None once that body expired): the page shows what it approves."""
    rows = app.service.index.db.execute(
        "SELECT key, turn, asset, output, contract_version, placed_at FROM drafts "
        "WHERE heinzel = ? AND state = 'pending' ORDER BY placed_at",
        [heinzel_id],
    ).fetchall()
    found = []
    for key, turn, asset, output, version, placed_at in rows:
        records = Bodies(app.service.home.session_dir(heinzel_id)).read(str(turn)) or []
        texts = [
            v["outcome"]["draft"].get("text", "")
            for r in records
            if r.get("kind") == "value"
            and isinstance(v := r.get("value"), dict)
            and isinstance(v.get("outcome"), dict)
            and isinstance(v["outcome"].get("draft"), dict)
        ]
        found.append(
            {
                "key": key,
                "turn": turn,
                "where": str(asset or output or "").removeprefix("file:"),
                "said": draft_waits(asset or output),
                "contract_version": version,
                "placed_at": placed_at,
                "text": _clip(texts[-1]) if texts else None,
            }
        )
    return found
