"""A turn's part of the flow: falling back on the last approved version of a late input.

When an upstream missed the deadline an input's ``needed_by`` sets (its draft still
pending, `heinzel.index.flow.fallbacks`), gather does not wait for it: the input is read
as approved (the pending sections left out, `without_pending`), the spine records
``input.fell_back{input, upstream, output, deadline, approved_fp, approved_at, stale_s}``
(no content) keyed ``<id>@fell_back:<turn>:<input>``, the reader's user gets one
``notice.posted{reason: fell-back}``, and the model gets an input ``stale`` that says so
in words, so the draft says it too. A gather run again after a crash records neither
twice (the keys).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from heinzel.capabilities.documents import without_pending

if TYPE_CHECKING:
    from heinzel.turns.env import TurnEnv
    from machines import TurnContext

__all__ = ["fall_back", "stale_words"]

FELL_BACK_FIELDS = ("input", "upstream", "output", "deadline", "approved_fp", "approved_at")


def _age(seconds: int | None) -> str:
    if seconds is None:
        return "never approved"
    age = timedelta(seconds=seconds)
    days, hours = age.days, age.seconds // 3600
    return f"{days} d {hours} h old" if days else f"{hours} h {age.seconds // 60 % 60} min old"


def stale_words(fell: Mapping[str, Any]) -> str:
    """One line a reader understands: which input, whose, since when, how old."""
    approved = fell.get("approved_at")
    when = str(approved)[:16].replace("T", " ")
    version = (
        f"the version approved {when} UTC ({_age(fell.get('stale_s'))})"
        if approved
        else "no approved version (it was never approved)"
    )
    return (
        f"{fell['input']} is stale: {fell['upstream_name']}'s {fell['output']} was not approved "
        f"by {fell['deadline_local']}, so this uses {version}"
    )


def fall_back(env: TurnEnv, ctx: TurnContext, staged: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Read each late input as approved, record it once, and return the ``stale`` input
    (none when nothing fell back)."""
    lines: list[str] = []
    for fell in env.fallbacks:
        item = next((i for i in staged if i.get("name") == fell["input"]), None)
        if item is None:
            continue
        item["content"] = without_pending(str(item.get("content") or ""))
        words = stale_words(fell)
        lines.append(words)
        key = f"{env.heinzel_id}@fell_back:{ctx.turn}:{fell['input']}"
        if not ctx.journal.key_events(key):
            data = {f: fell.get(f) for f in FELL_BACK_FIELDS}
            data["stale_s"] = fell.get("stale_s")
            ctx.journal.append("input.fell_back", data, turn=ctx.turn, key=key)
        notice = f"{env.heinzel_id}@notice:fell-back:{ctx.turn}:{fell['input']}"
        if not ctx.journal.key_events(notice):
            message = f"{env.name} went on without waiting: {words}"
            data = {
                "reason": "fell-back",
                "day": env.clock().isoformat()[:10],
                "message": message[:300],
                "to": fell.get("user") or "owner",
            }
            ctx.journal.append(
                "notice.posted", data, turn=ctx.turn, key=notice, short_text=("message",)
            )
    if not lines:
        return []
    return [{"name": "stale", "source": "hz:flow", "content": "\n".join(lines)}]
