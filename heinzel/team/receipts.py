"""Receipt-grade events: what of a team Heinzelmännchen leaves the machine, and the lint.

ADR 0049 statement 13: ``turn.finished`` (cause, disposition, cost, the contract
fingerprint, input fingerprints, the draft's hash), ``draft.placed`` (key, asset ref,
hash), ``approval.observed`` (approver's roster handle, share changed, ``output_fp``) and
``contract.amended`` (version, fingerprint). Each record is one JSON line with an
envelope (`ENVELOPE`: the receipt's id, kind, the team id, when, by whom, the lease's
fencing token, the slot key) and exactly its kind's fields (`FIELDS`). An asset ref is a
name of a place, so it leaves as its SHA-256 (``asset``); keys are rewritten from the
local id to the team id, which every machine shares, and a key the lint would refuse (a
draft's names its place) leaves as the team id and the SHA-256 of the rest (`team_key`).

`lint_record` refuses a field outside the allowlist, a string that is not an id, hash,
number, timestamp, key, vocabulary word or roster handle, and anything email-like;
`sort_records` adds the fencing rule: a receipt is judged by the lease it was written
under, never by its place in the branch: it counts when its token was held by its writer
at its ``at``, as the lease history shows (`Grant`: the ``lease.granted`` lines each new
holder writes to ``hz/state``, and the current lease refs). A later holder's token never
makes an earlier holder's receipt stale.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, Final

from ledger.event import Event, format_ts, parse_ts
from ledger.records import frozen_record
from machines.vocabulary import CAUSES, DISPOSITIONS

__all__ = [
    "ENVELOPE",
    "FIELDS",
    "NEWER",
    "RECEIPT_VERSION",
    "Grant",
    "Quarantined",
    "from_event",
    "grant_record",
    "held_at",
    "history",
    "judge",
    "lint_record",
    "lint_records",
    "misplaced",
    "sort_records",
    "team_id",
    "team_key",
]

ENVELOPE: Final = ("id", "kind", "team", "at", "by", "machine", "token", "key")
RECEIPT_VERSION: Final = 1
"""The receipts this hz writes and reads: they carry no ``v``, which is 1. A later hz
whose receipts an older member would miscount writes ``v`` (2, ...); such a line is kept
on ``hz/state`` and quarantined here, counted for nothing, as written by a newer hz
(docs/team.md, "Members on other versions")."""
NEWER: Final = "written by a newer hz"
"""How a quarantined line of a newer member's receipt version starts its problem."""
FIELDS: Final[Mapping[str, tuple[str, ...]]] = {
    "turn.finished": (
        "cause",
        "disposition",
        "cost_usd",
        "contract_fp",
        "input_fps",
        "draft_hash",
    ),
    "draft.placed": ("asset", "hash"),
    "approval.observed": ("approver", "share_changed", "output_fp"),
    "contract.amended": ("version", "fingerprint"),
    "lease.granted": (),
}
"""Exactly statement 13's fields per kind; the lint refuses any other. ``lease.granted``
is the lease history: the envelope alone (who took which token, on which machine, when),
no content."""

UNFENCED: Final = frozenset(("approval.observed", "contract.amended"))
"""Kinds that need no lease: a person's approval or amendment, collected whenever the
daemon next ticks, carries the token its writer held at its time, or 0 (none)."""

_ID = re.compile(r"[a-z]{1,4}-[0-9A-Za-z]{8,40}")
_HASH = re.compile(r"(sha256:)?[0-9a-f]{12,64}")
_TS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z")
_KEY = re.compile(r"[a-z]{1,4}-[0-9A-Za-z]{8,40}@[0-9A-Za-z:.\-]{1,80}")
_EMAIL = re.compile(r"[^\s@]+@[^\s@]+\.[A-Za-z]{2,}\b|mailto:|%40")
_WORDS: Final = frozenset((*CAUSES, *DISPOSITIONS, *FIELDS))


def team_id(name: str) -> str:
    """The id every machine gives the team Heinzelmännchen named ``name``."""
    return "tm-" + hashlib.sha256(f"team/{name}".encode()).hexdigest()[:24]


def team_key(local_key: str, local_id: str, team: str) -> str:
    """A key with the local id replaced by the team id (slot keys are ``<id>@<slot>``).

    What follows the id leaves as it is when the lint admits it (a slot, a request id);
    else as its SHA-256 (``<team>@sha256:<hex>``): a draft's key names its place (a local
    path, a document), which leaves the machine only hashed, as ``asset`` does, and an
    approval's key is longer than a key may be. Every machine rewrites a key the same way,
    so a slot's receipt, its claim and its wake still match."""
    rest = local_key[len(local_id) :] if local_key.startswith(local_id) else ""
    if not rest or (_KEY.fullmatch(team + rest) and not _EMAIL.search(rest)):
        return team + rest
    return f"{team}@sha256:{hashlib.sha256(rest.removeprefix('@').encode()).hexdigest()}"


def _hash(value: object) -> str | None:
    if value is None:
        return None
    text = str(value)
    return text if _HASH.fullmatch(text) else "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def from_event(
    event: Event,
    *,
    local_id: str,
    team: str,
    by: str,
    token: int,
    machine: str | None = None,
    started: Mapping[str, Any] | None = None,
    contract_fp: str | None = None,
    draft_hash: str | None = None,
    carried: bool = False,
) -> dict[str, Any] | None:
    """The receipt of one spine event, or None when the event is not receipt-grade.

    ``started`` is the turn's ``turn.started`` data (its cause and keys) for a final
    turn event; ``draft_hash`` the hash of a draft the turn placed. A ``carried`` event
    (one another line carries, with that line's seq) is named by its kind as well."""
    place = f"{local_id}:{event.seq}:{event.kind}" if carried else f"{local_id}:{event.seq}"
    digest = hashlib.sha256(place.encode()).hexdigest()[:24]
    base: dict[str, Any] = {
        "id": f"rc-{digest}",
        "at": format_ts(parse_ts(event.ts)),
        "team": team,
        "by": by,
        "token": token,
        **({"machine": machine} if machine is not None else {}),
    }
    data = event.data
    if event.kind in ("turn.finished", "turn.skipped", "turn.failed", "turn.abandoned"):
        started = started or {}
        key = str(event.key or started.get("key") or (started.get("keys") or [""])[0])
        disposition = data.get("disposition") or event.kind.removeprefix("turn.")
        inputs = started.get("inputs")
        fps = sorted(str(v) for v in inputs.values()) if isinstance(inputs, dict) else []
        return {
            **base,
            "kind": "turn.finished",
            "key": team_key(key, local_id, team),
            "cause": str(data.get("cause") or started.get("cause") or "schedule"),
            "disposition": str(disposition),
            "cost_usd": float(data.get("usd") or data.get("cost_usd") or 0.0),
            "contract_fp": _hash(contract_fp),
            "input_fps": [h for h in (_hash(f) for f in fps) if h],
            "draft_hash": _hash(draft_hash),
        }
    if event.kind == "draft.placed":
        return {
            **base,
            "kind": "draft.placed",
            "key": team_key(str(event.key or ""), local_id, team),
            "asset": _hash(data.get("asset") or data.get("asset_ref")),
            "hash": _hash(data.get("hash")),
        }
    if event.kind == "approval.observed":
        return {
            **base,
            "kind": "approval.observed",
            "key": team_key(str(event.key or ""), local_id, team),
            "approver": data.get("approver"),
            "share_changed": data.get("share_changed"),
            "output_fp": _hash(data.get("approved_fp") or data.get("output_fp")),
        }
    if event.kind in ("contract.approved", "contract.amended"):
        return {
            **base,
            "kind": "contract.amended",
            "key": f"{team}@v{int(data.get('version') or 0)}",
            "version": data.get("version"),
            "fingerprint": _hash(data.get("fingerprint") or contract_fp),
        }
    return None


@frozen_record
class Grant:
    """One entry of a lease's history: ``token`` was granted to ``holder`` on
    ``machine`` at ``since`` (held until a higher token was granted)."""

    token: int
    holder: str
    machine: str | None
    since: str


def grant_record(team: str, grant: Grant) -> dict[str, Any]:
    """The ``lease.granted`` line of ``grant`` on ``hz/state`` (its id names the team and
    token, so a grant lands once however often it is pushed)."""
    digest = hashlib.sha256(f"{team}:lease:{grant.token}".encode()).hexdigest()[:24]
    return {
        "id": f"rc-{digest}",
        "kind": "lease.granted",
        "team": team,
        "at": grant.since,
        "by": grant.holder,
        **({"machine": grant.machine} if grant.machine else {}),
        "token": grant.token,
        "key": f"{team}@lease-{grant.token}",
    }


def held_at(grants: Mapping[int, Grant], at: str) -> Grant | None:
    """The grant in force at ``at``: the highest token granted at or before it."""
    when = parse_ts(at)
    found = None
    for grant in grants.values():
        if parse_ts(grant.since) <= when and (found is None or grant.token > found.token):
            found = grant
    return found


def judge(record: Mapping[str, Any], grants: Mapping[int, Grant]) -> str | None:
    """Why ``record`` does not count under its team's lease history ``grants`` (None: it
    counts): a receipt counts when its token was held by its writer at its ``at``. A
    receipt of an unfenced kind (`UNFENCED`) may carry 0; a turn's may not."""
    token, by, at = record.get("token"), record.get("by"), str(record.get("at"))
    kind = record.get("kind")
    if kind == "lease.granted" or not isinstance(token, int):
        return None
    if token == 0:
        return None if kind in UNFENCED else f"{kind} carries no lease token"
    try:
        current = held_at(grants, at)
    except ValueError:
        return "at is not a timestamp"
    own = grants.get(token)
    if current is not None and current.token > token:
        return (
            f"stale fencing token {token}: token {current.token} was granted to "
            f"{current.holder} at {current.since}, before this receipt's {at}"
        )
    if own is not None:
        machine = record.get("machine")
        if own.holder != by or (own.machine and machine and own.machine != machine):
            return f"token {token} was granted to {own.holder}, not to {str(by)[:40]}"
        if parse_ts(at) < parse_ts(own.since):
            return f"written at {at}, before its token {token} was granted ({own.since})"
    return None


def _string_ok(value: str, roster: frozenset[str]) -> bool:
    if _EMAIL.search(value):
        return False
    return bool(
        value in roster
        or value in _WORDS
        or _ID.fullmatch(value)
        or _HASH.fullmatch(value)
        or _TS.fullmatch(value)
        or (_KEY.fullmatch(value) and not _EMAIL.search(value))
    )


def lint_record(record: object, roster: Iterable[str]) -> list[str]:
    """What is wrong with one record (empty when it may leave the machine)."""
    names = frozenset(roster)
    if not isinstance(record, dict):
        return ["a record is not a JSON object"]
    version = record.get("v")
    if isinstance(version, int) and not isinstance(version, bool) and version > RECEIPT_VERSION:
        return [f"{NEWER} (receipt v{version}; this hz reads v{RECEIPT_VERSION})"]
    kind = str(record.get("kind"))
    if kind not in FIELDS:
        return [f"kind {str(kind)[:40]!r} is not receipt-grade"]
    problems = [
        f"field {str(k)[:40]!r} is not allowed in {kind}"
        for k in record
        if k not in ENVELOPE and k not in FIELDS[kind]
    ]
    if record.get("by") not in names:
        problems.append("by is not a roster handle")
    if kind == "approval.observed" and record.get("approver") not in names:
        problems.append("approver is not a roster handle")
    if not isinstance(record.get("token"), int):
        problems.append("token is not a number")

    def walk(path: str, value: object) -> None:
        if isinstance(value, bool) or value is None or isinstance(value, int | float):
            return
        if isinstance(value, str):
            if not _string_ok(value, names):
                problems.append(f"{path} holds text that is not an id, hash or handle")
        elif isinstance(value, list):
            for item in value:
                walk(path, item)
        else:
            problems.append(f"{path} is not a scalar or a list")

    for key, value in record.items():
        walk(str(key), value)
    return problems


@frozen_record
class Quarantined:
    """A line of ``hz/state`` the lint refuses: where it is, who it says wrote it, what
    it is, and why it is refused. It counts for nothing (no slot, no token floor) and
    never stops anyone's push."""

    where: str
    by: str | None
    kind: str | None
    key: str | None
    problem: str

    def describe(self) -> str:
        return f"{self.where}: {self.problem} (by {self.by!r}, {self.kind} {self.key})"


def sort_records(
    lines: Sequence[tuple[str, str]],
    roster: Iterable[str],
    ceilings: Mapping[str, int] | None = None,
    leases: Mapping[str, Grant] | None = None,
    *,
    climb: Collection[str] = (),
    unsigned: Mapping[str, str] | None = None,
) -> tuple[list[dict[str, Any]], list[Quarantined]]:
    """``(where, line)`` pairs split into the records the lint admits and the ones it
    quarantines, whatever their order: a line that is not a receipt the lint admits
    (`lint_record`); a token above ``ceilings[team]`` (the current lease's: no lease ever
    granted it, a forged receipt); a receipt whose token its writer did not hold at its
    ``at`` (`judge`), by the lease history (`history`; ``leases``: each team's current
    lease as a grant). ``climb``: teams whose lease ref is unreadable or deleted, whose
    ceiling (the highest token this home saw) rises only by ``lease.granted`` lines one
    token at a time, so a forged token 999 stays quarantined. ``unsigned``: ids of lines
    not signed by their writer's key (`heinzel.team.signing.unsigned_lines`)."""
    names = frozenset(roster)
    ceilings = _climbed(lines, names, ceilings or {}, climb)
    linted: list[tuple[str, dict[str, Any] | None, list[str]]] = []
    for where, line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if not isinstance(record, dict):
            linted.append((where, None, ["not a JSON object"]))
            continue
        problems = lint_record(record, names)
        team, token = str(record.get("team")), record.get("token")
        ceiling = (ceilings or {}).get(team)
        if not problems and isinstance(token, int) and ceiling is not None and token > ceiling:
            problems = [f"token {token} is above the lease's ({ceiling}): no lease granted it"]
        if not problems and not _TS.fullmatch(str(record.get("at"))):
            problems = ["at is not a timestamp"]
        if not problems and (wrong := misplaced(where.rsplit(":", 1)[0], record)):
            problems = [wrong]
        if not problems and str(record.get("id")) in (unsigned or {}):
            problems = [f"not signed by its writer's key: {(unsigned or {})[str(record['id'])]}"]
        linted.append((where, record, problems))
    grants = history([r for _, r, p in linted if r is not None and not p], leases)
    admitted: list[dict[str, Any]] = []
    quarantined: list[Quarantined] = []
    for where, record, refused in linted:
        if record is None:
            quarantined.append(Quarantined(where, None, None, None, refused[0]))
            continue
        found = None if refused else judge(record, grants.get(str(record.get("team")), {}))
        problems = [*refused, *([found] if found else [])]
        if problems:
            quarantined.append(
                Quarantined(
                    where,
                    str(record.get("by"))[:40] if record.get("by") is not None else None,
                    str(record.get("kind"))[:40],
                    str(record.get("key"))[:120] if record.get("key") is not None else None,
                    "; ".join(problems),
                )
            )
            continue
        admitted.append(record)
    return admitted, quarantined


_DAY_FILE = re.compile(r"([^/]+)/(\d{4}-\d\d-\d\d)\.jsonl")


def misplaced(path: str, record: Mapping[str, Any]) -> str | None:
    """Why ``record`` does not belong in the ``hz/state`` file ``path`` (None: it does,
    or ``path`` is not a day file): its ``at`` must fall on the file's day and its team
    be the file's folder, so a line dated 2099 inside a 2026 day file is refused."""
    found = _DAY_FILE.fullmatch(path)
    if found is None:
        return None
    if str(record.get("team")) != found.group(1):
        return f"team {str(record.get('team'))[:40]} is not this file's team"
    if str(record.get("at"))[:10] != found.group(2):
        return f"at {str(record.get('at'))[:40]} is not on this file's day ({found.group(2)})"
    return None


def _climbed(
    lines: Sequence[tuple[str, str]],
    names: frozenset[str],
    ceilings: Mapping[str, int],
    climb: Collection[str],
) -> dict[str, int]:
    """``ceilings``, each team of ``climb`` raised through its ``lease.granted`` lines
    that follow it one token at a time (each new holder raises the token by one)."""
    found = dict(ceilings)
    granted: dict[str, set[int]] = {}
    for _where, line in lines if climb else ():
        if '"lease.granted"' not in line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("kind") == "lease.granted":
            team, token = str(record.get("team")), record.get("token")
            if team in climb and isinstance(token, int) and not lint_record(record, names):
                granted.setdefault(team, set()).add(token)
    for team, tokens in granted.items():
        top = found.get(team, 0)
        while top + 1 in tokens:
            top += 1
        found[team] = top
    return found


def history(
    records: Iterable[Mapping[str, Any]], leases: Mapping[str, Grant] | None = None
) -> dict[str, dict[int, Grant]]:
    """Each team's lease history from linted records: its ``lease.granted`` lines (the
    first of a token counts), then each current lease (``leases``, which the ref's
    compare-and-swap made: it overrides a line for its token); a token with neither (a
    lease older than the history, or whose line never left) is known by its earliest
    turn receipt, since its holder wrote that under it."""
    grants: dict[str, dict[int, Grant]] = {}
    seen: dict[str, dict[int, Grant]] = {}
    for record in records:
        team, token = str(record.get("team")), int(record.get("token") or 0)
        if token <= 0:
            continue
        machine = str(record["machine"]) if record.get("machine") else None
        grant = Grant(token, str(record.get("by")), machine, str(record.get("at")))
        if record.get("kind") == "lease.granted":
            grants.setdefault(team, {}).setdefault(token, grant)
        elif record.get("kind") not in UNFENCED:
            known = seen.setdefault(team, {}).get(token)
            if known is None or parse_ts(grant.since) < parse_ts(known.since):
                seen[team][token] = grant
    for team, grant in (leases or {}).items():
        grants.setdefault(team, {})[grant.token] = grant
    for team, tokens in seen.items():
        for token, grant in tokens.items():
            grants.setdefault(team, {}).setdefault(token, grant)
    return grants


def lint_records(
    lines: Sequence[tuple[str, str]],
    roster: Iterable[str],
    ceilings: Mapping[str, int] | None = None,
    leases: Mapping[str, Grant] | None = None,
    *,
    climb: Collection[str] = (),
    unsigned: Mapping[str, str] | None = None,
) -> list[str]:
    """Lint ``(where, line)`` pairs in branch order: each quarantined line (`sort_records`),
    described with who and what."""
    found = sort_records(lines, roster, ceilings, leases, climb=climb, unsigned=unsigned)[1]
    return [q.describe() for q in found]
