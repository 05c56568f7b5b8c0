"""The action log of a Heinzelmännchen (``hz heinzel report NAME``): per turn, what it
read, what it wrote and what it decided, rebuilt from the spine and the turn bodies.

The spine holds the facts and hashes (``turn.started``, ``step.started`` of think with the
hash of the gathered inputs, ``step.started`` of outcome with the hash of the think step's
value, ``draft.placed``, ``effect.done``, ``turn.finished`` or ``turn.skipped``); the body
holds the content under those hashes (the inputs' names and fingerprints; the ``report``
tool's entries in the think value's ``reports``). A turn whose body is gone (pruned) shows
``"expired"`` where the body's content was; the spine's part stays.
"""

from __future__ import annotations

from typing import Any

from heinzel.session.sessions import Sessions
from heinzel.session.spend import turn_spend
from ledger.bodies import Bodies
from ledger.event import Event
from ledger.spine import read_events
from machines.stores.journal import expand_steps

__all__ = ["EXPIRED", "action_log"]

EXPIRED = "expired"
"""What the log shows for a part whose body is gone."""

_END = ("turn.finished", "turn.skipped")


def _body_value(records: list[dict[str, Any]] | None, digest: str) -> Any:
    """The body record with this hash (a step's value or the action entries)."""
    for record in records or ():
        if record.get("hash") == digest:
            return record.get("value")
    return None


def _inputs(records: list[dict[str, Any]] | None, events: list[Event]) -> Any:
    if records is None:
        return EXPIRED
    for event in events:
        if event.kind == "step.started" and event.data.get("step") == "think":
            value = _body_value(records, str(event.data.get("input")))
            if isinstance(value, dict):
                return [
                    {"name": i.get("name"), "fingerprint": i.get("fingerprint")}
                    for i in value.get("inputs") or ()
                    if isinstance(i, dict)
                ]
    return []


def _entries(records: list[dict[str, Any]] | None, events: list[Event]) -> Any:
    """The ``report`` entries in the think step's value (the outcome step's input)."""
    if records is None:
        return EXPIRED
    found: dict[str, dict[str, Any]] = {}
    for event in events:
        if event.kind == "step.started" and event.data.get("step") == "outcome":
            value = _body_value(records, str(event.data.get("input")))
            reports = value.get("reports") if isinstance(value, dict) else None
            for entry in reports or ():
                if isinstance(entry, dict):
                    found[str(entry.get("id"))] = entry
    return list(found.values())


def _wrote(events: list[Event]) -> list[dict[str, Any]]:
    wrote: dict[str, dict[str, Any]] = {}
    effects: dict[str, str] = {}
    for event in events:
        key = str(event.key or "")
        if event.kind == "effect.started":
            effects[key] = str(event.data.get("effect") or "")
        elif event.kind == "draft.placed":
            wrote[key] = {
                "what": "draft",
                "key": key,
                "asset": event.data.get("asset"),
                "hash": event.data.get("hash"),
            }
        elif event.kind == "effect.done" and key not in wrote:
            wrote[key] = {
                "what": effects.get(key) or "effect",
                "key": key,
                "asset": event.data.get("asset"),
                "hash": event.data.get("hash"),
            }
    return list(wrote.values())


def _turn(bodies: Bodies, turn: str, events: list[Event]) -> dict[str, Any]:
    started = events[0]
    records = bodies.read(turn)
    end = next((e for e in reversed(events) if e.kind in _END), None)
    usd = turn_spend(events)  # an open turn's reservation counts too
    decided: dict[str, Any] = {"state": "open" if end is None else "ended"}
    if end is not None:
        decided["disposition"] = end.data.get("disposition") or (
            "skipped" if end.kind == "turn.skipped" else None
        )
        decided["reason"] = end.data.get("reason")
        decided["report"] = end.data.get("report")
        usd = float(end.data.get("usd") or usd)
    decided["usd"] = usd
    return {
        "turn": turn,
        "at": started.ts,
        "cause": started.data.get("cause"),
        "version": (started.data.get("pins") or {}).get("contract_version"),
        "seqs": [events[0].seq, events[-1].seq],  # its spine lines, for `hz heinzel forget`
        "read": _inputs(records, events),
        "wrote": _wrote(events),
        "entries": _entries(records, events),
        "decided": decided,
    }


def action_log(sessions: Sessions, ref: str) -> dict[str, Any]:
    """Every turn of ``ref`` in order, each as read / wrote / entries / decided."""
    row = sessions.resolve(ref)
    heinzel_id = str(row["id"])
    by_turn: dict[str, list[Event]] = {}
    for event in expand_steps(read_events(sessions.home.spine_path(heinzel_id))):
        if event.turn is None:
            continue
        if event.kind == "turn.started":
            by_turn.setdefault(event.turn, [])
        if event.turn in by_turn:
            by_turn[event.turn].append(event)
    bodies = Bodies(sessions.home.session_dir(heinzel_id))
    turns = [_turn(bodies, turn, events) for turn, events in by_turn.items()]
    return {"name": str(row["name"]), "id": heinzel_id, "turns": turns}
