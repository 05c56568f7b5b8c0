"""The latest summary a Heinzelmännchen wrote, for the person (ADR 0049 statements 8, 19).

A summary is one of the short texts the user is meant to read: "what I know about this
asset and this user", written by the model when the events since the last one exceed the
budget. The model sees it at the head of every later turn; `show`, the page and MCP's
``heinzel_show`` show the same record to the person, so what the Heinzelmännchen carries
forward is never hidden from the one it works for.

The index keeps each ``summary.written`` line's offset (``marks``): the latest is one query
and one line read, never the spine's history.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from ledger.spine import read_events

FIELDS: Final = ("asset", "wants", "decisions", "open_questions", "next_deadline", "sources")
"""The summary's fixed fields, in the order they are shown (`heinzel.engine.outcome.Summary`)."""


def latest_summary(db: Any, spine: Path, heinzel_id: str) -> dict[str, Any] | None:
    """The last ``summary.written`` of ``heinzel_id``: its seq, turn, time and fields; None
    when it wrote none yet (or the line the index points at is gone)."""
    row = db.execute(
        "SELECT seq, line_offset FROM marks WHERE heinzel = ? AND kind = 'summary.written' "
        "ORDER BY seq DESC LIMIT 1",
        [heinzel_id],
    ).fetchone()
    if row is None or not spine.exists():
        return None
    event = next(read_events(spine, from_offset=int(row[1])), None)
    if event is None or event.kind != "summary.written":
        return None
    data = event.data
    shown: dict[str, Any] = {"seq": event.seq, "turn": event.turn, "at": event.ts}
    for field in FIELDS:
        value = data.get(field)
        if field in ("decisions", "open_questions", "sources"):
            shown[field] = [str(one) for one in value] if isinstance(value, list) else []
        else:
            shown[field] = None if value is None else str(value)
    shown["previous"] = data.get("previous")
    return shown


def summary_lines(summary: dict[str, Any] | None, indent: str = "  ") -> list[str]:
    """The summary for the terminal: its fields one per line, lists joined."""
    if summary is None:
        return [f"{indent}what it knows: no summary yet"]
    lines = [f"{indent}what it knows (summary #{summary['seq']}, {summary['at']}):"]
    for field in FIELDS:
        value = summary.get(field)
        if isinstance(value, list):
            if not value:
                continue
            value = "; ".join(value)
        if value:
            lines.append(f"{indent}  {field.replace('_', ' ')}: {value}")
    return lines
