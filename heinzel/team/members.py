"""This home in a team: its local team Heinzelmännchen (`Member`), its machine id
(`machine_id`), and `TeamBase`: the state every part of `heinzel.team.team.Team`
shares, with this member's handle, machine, mirror, outbox and local members.

`Team` (`heinzel.team.team`) is built in layers on `TeamBase`, each a module of its own;
its module's docstring names them.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from heinzel.contract.schedule import next_slot
from heinzel.session.sessions import Sessions
from heinzel.store.contracts import load_facts
from heinzel.team.git import Git
from heinzel.team.lease import Lease
from heinzel.team.outbox import Outbox
from heinzel.team.receipts import Grant, team_id
from heinzel.team.state import PublishStats
from ledger.event import parse_ts
from ledger.files import ensure_private_dir, write_atomic
from ledger.records import frozen_record, mutable_record

__all__ = ["MACHINE_ID", "Member", "Report", "TeamBase", "machine_id"]


MACHINE_ID = re.compile(r"mc-[0-9a-f]{20}")


class Report(Protocol):
    errors: list[dict[str, Any]]
    notices: list[str]
    team: dict[str, Any]


@frozen_record
class Member:
    """A local team Heinzelmännchen: its local id, team id, owner and delegates."""

    local: str
    name: str
    team: str
    owner: str | None
    delegates: tuple[str, ...]
    fingerprint: str | None
    schedule: str | None = None
    timezone: str | None = None

    def settled(self, key: str, done: set[str], now: datetime) -> bool:
        """Whether the claim ``key`` no longer holds the lease: its ``turn.finished``
        receipt is on ``hz/state`` (``done``), or it is a slot that coalesced into a later
        one: a later slot has a receipt, or is due by the schedule (every daemon runs
        only the latest due slot, so nobody starts this one again)."""
        if key in done:
            return True
        slot = _slot(key, self.team)
        if slot is None:
            return False
        if any((later := _slot(k, self.team)) is not None and later > slot for k in done):
            return True
        following = next_slot(self.schedule, self.timezone, slot)
        return following is not None and following <= now


@mutable_record
class TeamBase:
    """What the parts of a home's `Team` share: its sessions, what the tick's `before`
    read (the leases, the receipts on ``hz/state``, the token floors, the lease
    history) and decided (the tokens held, the claims, the changes), the push counts."""

    sessions: Sessions
    online: bool = False
    held: dict[str, int] = field(default_factory=dict)
    members: dict[str, Member] = field(default_factory=dict)
    leases: dict[str, tuple[str, Lease | None]] = field(default_factory=dict)
    stats: PublishStats = field(default_factory=PublishStats)
    changes: list[dict[str, Any]] = field(default_factory=list)
    received: dict[str, set[str]] = field(default_factory=dict)
    claims: dict[str, tuple[str, list[str]]] = field(default_factory=dict)
    known_machine: str | None = None
    floors: dict[str, int] = field(default_factory=dict)
    grants: dict[str, dict[int, Grant]] = field(default_factory=dict)
    granted: set[tuple[str, int]] = field(default_factory=set)
    unplaced: dict[str, Lease] = field(default_factory=dict)

    @property
    def me(self) -> str:
        return str(self.sessions.settings.team.handle)

    @property
    def machine(self) -> str:
        """This home's machine id (`machine_id`), read once."""
        if self.known_machine is None:
            self.known_machine = machine_id(self.root)
        return self.known_machine

    @property
    def root(self) -> Path:
        return self.sessions.home.root / "team"

    @property
    def git(self) -> Git:
        return Git(
            self.root / "mirror.git",
            str(self.sessions.settings.team.repository),
            self.me,
            self.sessions.clock,
            self.sessions.settings.team.signing_key,
        )

    @property
    def outbox(self) -> Outbox:
        return Outbox(self.root)

    def local_members(self) -> dict[str, Member]:
        rows = self.sessions.index.db.execute(
            "SELECT id, name, contract_version, fingerprint, schedule, timezone FROM heinzel "
            "WHERE namespace = 'team' AND contract_version IS NOT NULL AND state != 'retired'"
        ).fetchall()
        found = {}
        extra = tuple(self.sessions.settings.team.delegates)
        for local, name, version, fingerprint, schedule, timezone in rows:
            front = load_facts(self.sessions.home, local, version, fingerprint).frontmatter
            delegates = tuple(sorted({*(front.get("hz.delegates") or []), *extra}))
            owner = front.get("hz.owner")
            found[local] = Member(
                local, name, team_id(name), owner, delegates, fingerprint, schedule, timezone
            )
        return found


def machine_id(root: Path) -> str:
    """The stable id of this home's machine (``<home>/team/machine``, ``mc-`` and 20
    random hex digits), created once, private; a lease and a receipt name it beside the
    member's handle. A home copied to another machine copies it: run ``rm
    <home>/team/machine`` on the copy so it gets its own."""
    path = root / "machine"
    try:
        found = path.read_text(encoding="utf-8").strip()
    except OSError:
        found = ""
    if MACHINE_ID.fullmatch(found):
        return found
    made = "mc-" + secrets.token_hex(10)
    ensure_private_dir(root)
    write_atomic(path, made.encode())
    return made


def _slot(key: str, team: str) -> datetime | None:
    """The slot a team slot key (``<team id>@<timestamp>``) names, else None."""
    head, _, rest = key.partition("@")
    if head != team or not rest[:1].isdigit():
        return None
    try:
        return parse_ts(rest)
    except ValueError:
        return None
