"""Why a turn failed, as its body keeps it: the coded cause (code, message, hint).

The host keeps the deepest coded error of a turn that failed or was abandoned in the turn's
body (`heinzel.turns.failure.keep_failure`); `cause_of` reads it back for `hz heinzel
wake|chat|retry|show`, the web page and MCP, after the process that ran the turn is gone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ledger.bodies import Bodies

__all__ = ["cause_of"]


def cause_of(session_dir: Path, turn: str | None) -> dict[str, str] | None:
    """The cause kept for ``turn`` (the last one kept), or None."""
    if not turn:
        return None
    found: dict[str, str] | None = None
    for record in Bodies(session_dir).read(turn) or []:
        value: Any = record.get("value")
        if isinstance(value, dict) and isinstance(value.get("failure"), dict):
            found = {k: str(v) for k, v in value["failure"].items()}
    return found
