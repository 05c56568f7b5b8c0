"""The index statements a turn runs find a session's rows without walking its history."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from heinzel.turns import TurnHost, default_adapters
from machines import Wake, keys
from tests.turns.test_acts import answering

GROWING = ("turns", "keys", "drafts", "marks")
"""The tables that gain rows with every turn of a session."""
_BY_SESSION = re.compile(r"^SEARCH (\w+) USING (?:COVERING )?INDEX \w+ \(heinzel=\?\)$")
_SCAN = re.compile(r"^SCAN (\w+)\b")
_OPEN_TURNS = "SCAN turns USING INDEX turns_open"
"""The partial index of the turns not ended: it grows with running turns, not with age."""


def _statements(make_service: Callable[..., Any]) -> tuple[Any, set[str]]:
    service, heinzel_id, _ = make_service()
    summary = {"asset": "file:report.md", "wants": "weekly digests", "decisions": ["short"]}
    host = TurnHost(service, model=answering({"report": "summed", "summary": summary}))
    adapters = default_adapters(service.settings)
    host.run_wakes(heinzel_id, [Wake("asked", keys.asked(heinzel_id, "r0"))], adapters=adapters)
    seen: set[str] = set()
    service.index.db.conn.set_trace_callback(seen.add)
    try:
        wake = Wake("schedule", keys.schedule(heinzel_id, "slot1"))
        host.run_wakes(heinzel_id, [wake], adapters=adapters)
    finally:
        service.index.db.conn.set_trace_callback(None)
    return service, {s for s in seen if s.lstrip().upper().startswith(("SELECT", "UPDATE"))}


def test_a_turn_never_walks_all_of_a_sessions_turns_keys_drafts_or_marks(
    make_service: Callable[..., Any],
) -> None:
    """No statement of a turn scans a growing table or searches it by the session alone
    (each has an index on more than the heinzel column), so a turn's index work does not
    grow with the session's age."""
    service, statements = _statements(make_service)
    assert any("FROM turns" in s for s in statements)
    walks = []
    for statement in statements:
        plan = service.index.db.conn.execute("EXPLAIN QUERY PLAN " + statement).fetchall()
        for step in (str(row[-1]) for row in plan):
            match = _BY_SESSION.match(step) or _SCAN.match(step)
            if match and match.group(1) in GROWING and not step.startswith(_OPEN_TURNS):
                walks.append((step, " ".join(statement.split())[:160]))
    assert walks == []
