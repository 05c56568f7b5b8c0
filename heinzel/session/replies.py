"""What a turn did and said, as words a person reads: the reply a chat shows (`hz heinzel
chat`, the page's sidebar, MCP ``heinzel_chat``), read from the turn's own record with no
model call.

From the spine: how it ended (disposition, reason), its report line (`turn.finished` keeps
the outcome's short report), where a draft went (`draft.placed`), the question it asked
(`question.asked`), a write it proposed, an amendment it proposed (`amendment.proposed`). From
the turn's body while it exists: the draft's first lines. The spine is read from the
turn's `turn.started` offset the index keeps, so a reply costs the turn's own lines.
"""

from __future__ import annotations

from typing import Any

from heinzel.session.sessions import Sessions
from ledger.bodies import Bodies
from ledger.spine import read_events
from machines.stores.journal import expand_carried

__all__ = ["PREVIEW_LINES", "turn_reply"]

PREVIEW_LINES = 3
"""How many of a draft's non-empty lines a reply quotes."""


def turn_reply(sessions: Sessions, heinzel_id: str, turn: str) -> dict[str, Any] | None:
    """``{turn, ended, report, said, draft?, question?, proposal?, amendment?, refused?}`` for
    ``turn``, or None when the index has no such turn. ``said`` is the whole reply in a
    few lines, the others its parts."""
    row = sessions.read_db.execute(
        "SELECT start_offset, state, disposition, reason FROM turns WHERE id = ? AND heinzel = ?",
        [turn, heinzel_id],
    ).fetchone()
    if row is None:
        return None
    offset, state, disposition, reason = row
    reply: dict[str, Any] = {"turn": turn, "ended": disposition or state, "report": None}
    if reason:
        reply["reason"] = reason
    path = sessions.home.spine_path(heinzel_id)
    for event in expand_carried(read_events(path, from_offset=int(offset or 0))):
        data = event.data
        if event.kind == "amendment.proposed" and data.get("by") == "heinzel":
            # written by the turn's act through the service, without the turn's id
            reply["amendment"] = {"version": data.get("version"), "reason": data.get("reason")}
        if event.turn != turn:
            continue
        if event.kind in ("turn.finished", "turn.skipped"):
            reply["report"] = data.get("report") or reply["report"]
            reply["ended"] = data.get("disposition") or reply["ended"]
            reply["reason"] = data.get("reason") or reply.get("reason")
            break
        if event.kind == "draft.placed":
            reply["draft"] = {"asset": data.get("asset"), "output": data.get("output")}
        elif event.kind == "question.asked" and data.get("proposal"):
            reply["proposal"] = {"tool": data.get("tool"), "id": data.get("proposal")}
        elif event.kind == "question.asked":
            reply["question"] = data.get("question")
        elif event.kind == "amendment.refused":
            reply["refused"] = data.get("code")
    if "draft" in reply:
        reply["draft"]["preview"] = _preview(sessions, heinzel_id, turn)
    reply["said"] = _said(reply)
    return reply


def _preview(sessions: Sessions, heinzel_id: str, turn: str) -> list[str]:
    """The draft's first non-empty lines, from the turn's body (none once it expired)."""
    records = Bodies(sessions.home.session_dir(heinzel_id)).read(turn) or []
    texts = [
        value["outcome"]["draft"].get("text", "")
        for record in records
        if record.get("kind") == "value"
        and isinstance(value := record.get("value"), dict)
        and isinstance(value.get("outcome"), dict)
        and isinstance(value["outcome"].get("draft"), dict)
    ]
    if not texts:
        return []
    lines = [line.rstrip() for line in str(texts[-1]).splitlines() if line.strip()]
    return [line[:200] for line in lines[:PREVIEW_LINES]]


def _said(reply: dict[str, Any]) -> list[str]:
    """The reply as lines: what it did, then what it said."""
    said: list[str] = []
    if "draft" in reply:
        where = str(reply["draft"].get("asset") or "").removeprefix("file:")
        said.append(f"drafted into {where}:" if where else "drafted:")
        said += [f"  {line}" for line in reply["draft"].get("preview") or []]
    if reply.get("question"):
        said.append(f"asks: {reply['question']}")
    if "proposal" in reply:
        said.append(f"proposes to run {reply['proposal']['tool']} (answer yes or no)")
    if reply.get("refused"):
        said.append(
            f"proposed an amendment that hz refused ({reply['refused']}): nothing was "
            "proposed to you (hz heinzel report shows why)"
        )
    if "amendment" in reply:
        amendment = reply["amendment"]
        why = f": {amendment['reason']}" if amendment.get("reason") else ""
        said.append(f"proposes contract v{amendment['version']}{why} (its diff is in show)")
    if reply.get("report"):
        said.append(f"says: {reply['report']}")
    if not said:
        why = f" ({reply['reason']})" if reply.get("reason") else ""
        said.append(f"{reply['ended']}{why}")
    return said
