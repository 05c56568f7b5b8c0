"""Retry as a fork (ADR 0049 statement 13): a turn of cause ``retry`` keyed
``<id>@retry:<request id>`` (once per request: the key names no parent, which changes once
a retry ran) runs from the parent's gathered inputs.

The fork's ``turn.started`` records ``parent_turn`` and ``from_step: think``; its gather
hands on what the parent's gather put in the body (the staged inputs, never fetched
again) with the user's hint as a new input, and its draft supersedes the parent's.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ledger.bodies import Bodies
from ledger.errors import LedgerError
from ledger.spine import read_events
from machines import Wake
from machines.stores.disk_body import DiskBody
from machines.stores.journal import expand_carried

__all__ = ["FROM_STEP", "fork_data", "parent_inputs", "retry_parent"]

FROM_STEP = "think"
"""Where a fork picks up: after the parent's gather."""


def retry_parent(wakes: Sequence[Wake]) -> str | None:
    """The parent turn a retry wake of the old form ``<id>@retry:<parent>:<request id>``
    names (None for any other wake: a retry keyed ``<id>@retry:<request id>`` has its
    parent given with it, `fork_data`)."""
    for wake in wakes:
        tail = wake.key.split("@", 1)[-1]
        if wake.cause == "retry" and tail.startswith("retry:") and tail.count(":") == 2:
            return tail.split(":")[1]
    return None


def parent_inputs(spine_path: Path, session_dir: Path, parent: str) -> list[dict[str, Any]] | None:
    """The inputs the parent's gather recorded in its body, without its own hint; None
    when the parent never finished gathering (the fork stages its inputs as usual)."""
    digest = None
    for event in expand_carried(read_events(spine_path)):  # a carried step start too
        data = event.data
        if event.turn == parent and data.get("step") == FROM_STEP and data.get("input"):
            digest = data["input"]
            break
    if not isinstance(digest, str):
        return None
    try:
        gathered = DiskBody(Bodies(session_dir)).get(parent, digest)
    except (KeyError, OSError, ValueError, LedgerError):  # pruned or damaged: stage afresh
        return None
    if not isinstance(gathered, dict) or not isinstance(gathered.get("inputs"), list):
        return None
    return [dict(i) for i in gathered["inputs"] if i.get("name") != "hint"]


def fork_data(parent: str) -> dict[str, str]:
    """The fields a fork adds to its ``turn.started``."""
    return {"parent_turn": parent, "from_step": FROM_STEP}
