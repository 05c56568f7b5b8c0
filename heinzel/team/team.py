"""`Team`: one home's part in a team repository, as the tick's team hook.

Each tick, under the tick lock: `before` fetches ``hz/state`` and the lease refs once,
decides every local team Heinzelmännchen's lease (`heinzel.team.lease.decide`) and
writes the changes in one push of compare-and-swap updates; `admit` lets a team
Heinzelmännchen's wakes through only while this daemon holds its lease, and drops a slot
``hz/state`` already has a receipt for (a resume of such a turn becomes ``superseded``);
`claim` writes the slot keys about to run into the leases' ``open`` claims, in one push,
before any of their turns starts (a slot whose claim did not take does not run);
`after` copies the receipt-grade events the tick appended into the outbox and pushes the
outbox to ``hz/state`` (`heinzel.team.state.publish`). Offline, nothing is lost: the
outbox waits, a lease is used only until its known expiry and only to resume turns
already open: a new slot waits for a claim that reached the remote.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from heinzel.contract.schedule import next_slot
from heinzel.errors import HeinzelError
from heinzel.session.sessions import Sessions
from heinzel.store.contracts import load_facts
from heinzel.team.git import (
    HONOURED,
    LEASE_PREFIX,
    STATE_REF,
    VERIFIED_STATE,
    Git,
    declined_error,
)
from heinzel.team.lease import Lease, decide, owner_mark, seen_only
from heinzel.team.outbox import Outbox
from heinzel.team.receipts import (
    NEWER,
    Grant,
    Quarantined,
    from_event,
    grant_record,
    held_at,
    history,
    judge,
    lint_record,
    team_id,
    team_key,
)
from heinzel.team.roster import ROSTER_PATH, Roster, RosterState, follow, parse_key
from heinzel.team.signing import public_key, unsigned_lines
from heinzel.team.state import (
    PublishStats,
    last_receipts,
    lint_branch,
    own_dropped,
    publish,
    scan,
)
from ledger.bodies import Bodies
from ledger.errors import LedgerError
from ledger.event import Event, format_ts, parse_ts
from ledger.files import ensure_private_dir, write_atomic
from ledger.records import frozen_record, mutable_record
from ledger.spine import read_events
from machines.crashkit.crash import crash_at
from machines.keys import Wake
from machines.stores.disk_body import DiskBody
from machines.stores.journal import expand_carried

__all__ = ["Member", "Team", "lease_grants", "machine_id"]

_MACHINE = re.compile(r"mc-[0-9a-f]{20}")
_HANDLE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}")

_FINAL = ("turn.finished", "turn.skipped", "turn.failed", "turn.abandoned")
_RECEIPT_KINDS = (
    *_FINAL,
    "turn.started",
    "draft.placed",
    "approval.observed",
    "contract.approved",
    "contract.amended",
    "step.started",
)


class _Report(Protocol):
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
class Team:
    """The team hook of one home's tick (`heinzel.tick.tick.TeamHook`)."""

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

    @classmethod
    def configured(cls, sessions: Sessions) -> Team | None:
        """The team hook when ``[team] repository`` and ``handle`` are set, else None."""
        return cls(sessions) if sessions.settings.team.joined else None

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

    def roster(self) -> set[str]:
        """The roster handles the lint admits: this user, ``[team] members`` and
        ``delegates``, and every local team contract's owner and delegates."""
        team = self.sessions.settings.team
        names = {self.me, *team.members, *team.delegates}
        names.update((self.team_roster() or Roster({})).handles())
        for member in self.local_members().values():
            names.update(member.delegates)
            if member.owner:
                names.add(member.owner)
        return names

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

    # -- the hook --------------------------------------------------------------------

    def before(self, report: _Report) -> None:
        """Fetch, decide and write every lease; push what waits in the outbox."""
        now = self.sessions.clock()
        self.members = self.local_members()
        self.held, self.changes, self.received, self.claims = {}, [], {}, {}
        if not self.members and not self.outbox.pending():
            return
        git = self.git
        try:
            self.fetch(git, report.notices)
            self.online = True
        except HeinzelError as error:
            self.online = False
            report.errors.append({"id": "team", "code": error.code, "message": error.message})
        known = git.leases() if (git.mirror / "HEAD").exists() else {}
        self.leases = {
            tid: (commit, Lease.from_message(message)) for tid, (commit, message) in known.items()
        }
        self.leases = self.honoured(git, self.leases, report.notices)
        if self.online:
            teams = [m.team for m in self.members.values()]
            seen = self.leases_seen({t: lease for t, (_, lease) in self.leases.items()})
            read = {t: lease for t, (_, lease) in self.leases.items()}
            current = lease_grants(read)
            found = scan(
                git,
                teams,
                now,
                self.roster(),
                seen,
                leases=current,
                climb=_soft(seen, read),
                unsigned=self.unsigned(),
            )
            _newer_members(found.quarantined, report)
            self.received = found.keys
            self.grants, self.granted = found.grants, found.granted
            self.floors = dict(seen)
            for tid, token in found.tokens.items():
                self.floors[tid] = max(self.floors.get(tid, 0), token)
            refusal = self.signing_refusal()
            if refusal is not None:  # signing is required: push nothing, as if offline
                self.online = False
                report.errors.append(
                    {"id": "team", "code": refusal.code, "message": refusal.message}
                )
                report.notices.append(f"team: {refusal.code}: {refusal.message}; {refusal.hint}")
        self._decide(now, git, report)
        self._record_grants()
        self._collect()
        self._flush(report)

    def _record_grants(self) -> None:
        """The lease history: each lease this machine holds whose ``lease.granted`` line
        is not on ``hz/state`` yet goes into the outbox (its id names team and token, so
        it lands once), and the history this tick judges by includes it."""
        mine = {
            tid: lease
            for tid, (_, lease) in self.leases.items()
            if lease is not None and lease.held_by(self.me, self.machine)
        }
        for tid, grant in lease_grants(mine).items():
            self.grants.setdefault(tid, {})[grant.token] = grant
        if not self.online:
            return
        waiting = {str(record.get("id")) for _, record in self.outbox.pending()}
        records = [
            record
            for tid, grant in sorted(lease_grants(mine).items())
            if (tid, grant.token) not in self.granted
            and (record := grant_record(tid, grant))["id"] not in waiting
        ]
        self.outbox.put(records)

    def fetch(self, git: Git, notices: list[str]) -> None:
        """One fetch, by every path that fetches (the tick, ``hz team lint``): a fetched
        ``hz/state`` that does not descend from the one examined last (a force-push, a
        deletion) is announced once in ``notices`` and survived (`_rewritten`); whether
        the remote was reached, and since when not, is kept for ``hz team status``."""
        now = format_ts(self.sessions.clock())
        try:
            git.ensure()
            last = git.seen_state() or git.state_tip()
            git.fetch()
        except HeinzelError as error:
            known = self.remote_state()
            self._remote_state(
                unreachable_since=known.get("unreachable_since") or now, error=error.message
            )
            raise
        tip = git.state_tip()
        rewrite = None
        if last is not None and not git.descends(last, tip):
            rewrite = self._rewritten(git, last, notices)
        git.see_state(tip)
        self._follow_roster(git, tip, notices)
        self._verify(git, tip)
        self._remote_state(
            reached=now,
            unreachable_since=None,
            error=None,
            **({"rewrite": rewrite} if rewrite else {}),
        )

    def roster_state(self) -> RosterState:
        """The roster this home accepted from ``hz/state`` (`heinzel.team.roster`)."""
        return RosterState.load(self.root / "roster.json")

    def team_roster(self) -> Roster | None:
        """The roster in force on ``hz/state`` as last fetched, or None (none yet)."""
        return self.roster_state().roster

    def _follow_roster(self, git: Git, tip: str | None, notices: list[str]) -> None:
        """The roster changes fetched since the last fetch, each accepted when the owner
        of the roster before it signed it, else refused with a notice (HZH482) and kept
        in ``<home>/team/roster.json`` for ``hz team status`` and ``hz team lint``."""
        state = self.roster_state()
        before = state.dump()
        for said in follow(git, state, tip):
            notices.append(
                f"team: HZH482: {said}; the roster before it stays in force. Ask the "
                "roster's owner to make the change (`hz team roster add`)"
            )
        if state.dump() != before:
            ensure_private_dir(self.root)
            write_atomic(self.root / "roster.json", state.dump())

    def change_roster(
        self,
        handle: str,
        key: str | None,
        role: str,
        remove: bool,
        machines: Mapping[str, str] | None = None,
    ) -> Roster:
        """The owner adds ``handle`` with ``key`` (and ``role``, and ``machines``: name ->
        machine id) to the roster on ``hz/state``, or removes it, in one commit signed
        with ``[team] signing_key`` (compare-and-swap, retried after a lost race); with no
        roster yet, this member starts it as its owner. HZH486 for anyone but the owner,
        or bad input."""
        settings = self.sessions.settings.team
        for name, machine in (machines or {}).items():
            if not _HANDLE.fullmatch(name) or not _MACHINE.fullmatch(machine):
                raise HeinzelError(
                    "HZH486",
                    f"--machine {name[:40]}={machine[:40]} is not a name and a machine id",
                    "write NAME=ID with the id `hz team status` shows on that machine "
                    "(`... as ben on mc-<20 hex digits>`): --machine laptop=mc-0123...",
                )
        if not settings.signing_key:
            raise signing_required(None, self.me)
        mine = public_key(settings.signing_key)
        git = self.git
        for _attempt in range(settings.push_retries):
            self.fetch(git, [])
            current = self.team_roster()
            if current is not None and current.owner != self.me:
                raise HeinzelError(
                    "HZH486",
                    f"only the roster's owner {current.owner} changes the roster; you are "
                    f"{self.me}",
                    f"give the change to {current.owner} (for a new member: its `hz team key` "
                    "line)",
                )
            base = current or Roster({}).with_member(self.me, "owner", mine)
            if remove:
                if handle not in base.handles() or handle == base.owner:
                    raise HeinzelError(
                        "HZH486",
                        f"{handle} is not a member the roster can lose (its owner is {base.owner})",
                        "`hz team roster` lists the members; to hand the roster on, add the "
                        "new owner with --role owner first",
                    )
                new = base.without(handle)
            else:
                found = parse_key(key or "")
                if found is None or not _HANDLE.fullmatch(handle):
                    raise HeinzelError(
                        "HZH486",
                        f"{handle[:40]!r} with {str(key)[:60]!r} is not a handle and an SSH "
                        "public key",
                        "pass the member's `hz team key` line, its .pub file or "
                        "`ssh-ed25519 AAAA...`: `hz team roster add ben ben.pub`",
                    )
                new = base.with_member(
                    handle, "owner" if handle == base.owner else role, found, machines
                )
            tip = git.state_tip()
            what = f"remove {handle}" if remove else f"add {handle} ({role})"
            commit = git.state_commit(tip, {ROSTER_PATH: new.render()}, f"hz: roster: {what}")
            pushed = git.push([(STATE_REF, commit, tip)])
            if STATE_REF in pushed.declined:
                raise declined_error(STATE_REF, pushed.declined[STATE_REF])
            if STATE_REF in pushed.accepted:
                git.track(commit)
                self._follow_roster(git, commit, [])
                return new
        raise HeinzelError(
            "HZH301",
            f"the team repository: hz/state moved under every one of {settings.push_retries} "
            "pushes of the roster",
            "run it again",
        )

    def allowed_signers(self) -> str | None:
        """The allowed-signers file every fetch verifies with: derived from the roster
        on ``hz/state`` (``<home>/team/allowed_signers``) once there is one, else
        ``[team] allowed_signers`` (a team from before the roster)."""
        roster = self.team_roster()
        if roster is None:
            return self.sessions.settings.team.allowed_signers
        path = self.root / "allowed_signers"
        text = roster.allowed_signers()
        try:
            same = path.read_text(encoding="utf-8") == text
        except OSError:
            same = False
        if not same:
            ensure_private_dir(self.root)
            write_atomic(path, text.encode())
        return str(path)

    def signing_refusal(self) -> HeinzelError | None:
        """When the roster on ``hz/state`` names keys, signing is required: HZH483 when
        this member has no ``[team] signing_key``, HZH484 when its key is not the
        roster's key for its handle (nothing this home pushes would be honoured)."""
        roster = self.team_roster()
        key = self.sessions.settings.team.signing_key
        if roster is None:
            return None
        if not key:
            return signing_required(roster.owner, self.me)
        try:
            mine = public_key(key)
        except HeinzelError as error:
            return error
        if mine not in roster.keys(self.me):
            return HeinzelError(
                "HZH484",
                f"your signing key is not the roster's key for {self.me}"
                + ("" if self.me in roster.handles() else f" ({self.me} is not on the roster)")
                + ": nothing of this machine is pushed",
                f"give `hz team key`'s line to the roster's owner {roster.owner} "
                f"(`hz team roster add {self.me} KEY`), or set [team] signing_key to the "
                "key the roster names (`hz team roster`)",
            )
        return None

    def _verify(self, git: Git, tip: str | None) -> None:
        """With an allowed-signers file (`allowed_signers`): the lines the commits
        fetched since the last verified one add that are not signed by their writer
        (`unsigned_lines`) join ``<home>/team/unsigned.json``, which every reader
        quarantines."""
        allowed = self.allowed_signers()
        if not allowed or tip is None:
            return
        done = git.run("rev-parse", "--verify", "--quiet", VERIFIED_STATE, check=False)
        since = done.stdout.strip() or None
        if since is not None and not git.descends(since, tip):
            since = None  # a rewrite: verify the branch as it is now
        if self.team_roster() is not None:
            # lines written before the first roster (a team that did not sign yet) are
            # not held to its keys: verify from its commit on
            listed = git.run("rev-list", "--reverse", tip, "--", ROSTER_PATH, check=False)
            first = next(iter(listed.stdout.split()), None)
            parent = git.run("rev-parse", "--verify", "--quiet", f"{first}^", check=False)
            start = parent.stdout.strip() if first else None
            if start and (since is None or git.descends(since, start)):
                since = start
        found = {**self.unsigned(), **unsigned_lines(git, allowed, since, tip)}
        ensure_private_dir(self.root)
        write_atomic(self.root / "unsigned.json", json.dumps(found, sort_keys=True).encode())
        git.run("update-ref", VERIFIED_STATE, tip)

    def unsigned(self) -> dict[str, str]:
        """``{receipt id: why}`` of the lines not signed by their writer (`_verify`)."""
        try:
            data = json.loads((self.root / "unsigned.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}

    def honoured(
        self,
        git: Git,
        leases: dict[str, tuple[str, Lease | None]],
        notices: list[str] | None = None,
    ) -> dict[str, tuple[str, Lease | None]]:
        """The leases as read, each checked against the roster on ``hz/state`` (none
        yet: every lease counts): one whose commit is not signed by its holder's key is
        not honoured, unless it is the "seen" mark of the Heinzelmännchen's owner
        (`seen_only` of the last lease verified here, or `owner_mark`: signed by the
        owner of a local team contract). It reads as the last lease of that ref this home
        verified (``refs/hz-honoured/lease/<team id>`` in the mirror), else as absent; the
        ref's commit is kept for the compare-and-swap, so the holder's next renewal, or the
        owner's or a delegate's take, writes over it. Each is said in ``notices`` (HZH485).
        One that a roster key signed (not its holder's, not a seen mark placed here) is
        kept in ``unplaced``: `_decide` writes nothing under it while it is in force."""
        roster = self.team_roster()
        self.unplaced = {}
        if roster is None or not leases:
            return leases
        kept = git.run(
            "for-each-ref",
            "--format=%(refname:lstrip=3)%00%(objectname)%00%(contents:subject)",
            HONOURED,
        ).stdout
        before: dict[str, tuple[str, str]] = {}
        for line in kept.splitlines():
            tid, _, rest = line.partition("\0")
            commit, _, message = rest.partition("\0")
            before[tid] = (commit, message)
        fresh = [c for tid, (c, _) in leases.items() if before.get(tid, ("", ""))[0] != c]
        checked = git.signatures(fresh, roster.allowed_signers())  # verified once each
        found = dict(leases)
        verified: dict[str, str] = {}
        owners: dict[str, str | None] | None = None
        for tid, (commit, lease) in leases.items():
            if lease is None or before.get(tid, ("", ""))[0] == commit:
                continue
            status, signer = checked.get(commit, ("N", ""))
            last = Lease.from_message(before[tid][1]) if tid in before else None
            if status == "G" and (signer == lease.holder or seen_only(lease, last)):
                verified[tid] = commit
                continue
            if status == "G" and signer != lease.holder:
                if owners is None:
                    owners = {m.team: m.owner for m in self.local_members().values()}
                if owner_mark(lease, last, signer, owners.get(tid)):
                    verified[tid] = commit  # the owner's seen mark on a lease missed here
                    continue
                self.unplaced[tid] = lease  # a roster key signed it: someone may honour it
            found[tid] = (commit, Lease.from_message(before[tid][1]) if tid in before else None)
            if notices is not None:
                notices.append(
                    f"team: HZH485: the lease {tid} naming {lease.holder[:40]} (token "
                    f"{lease.token}) is not signed by {lease.holder[:40]}'s key on the roster: "
                    "not honoured; the last lease verified stands until it is written over"
                )
        if verified:
            lines = "".join(f"update {HONOURED}{tid} {c}\n" for tid, c in verified.items())
            git.run("update-ref", "--stdin", stdin=lines, check=False)
        return found

    def remote_state(self) -> dict[str, Any]:
        """What the last fetch found (``<home>/team/remote.json``): ``reached`` (the last
        time the remote answered), ``unreachable_since`` and its ``error``, the last
        ``rewrite`` and the hook's last ``declined`` pushes."""
        try:
            data = json.loads((self.root / "remote.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _remote_state(self, **changes: Any) -> None:
        data = {**self.remote_state(), **changes}
        ensure_private_dir(self.root)
        write_atomic(self.root / "remote.json", json.dumps(data, sort_keys=True).encode())

    def _rewritten(self, git: Git, last: str, notices: list[str]) -> dict[str, Any]:
        """``hz/state`` as fetched does not descend from the tip examined last (a
        force-push or a deletion rewrote it): say so, and put this machine's receipts the
        rewrite dropped back into the outbox (pushed again without the token check:
        they passed it once, and they count as what they were)."""
        tip = git.state_tip()
        dropped = own_dropped(git, last, tip, self.me, self.machine)
        notices.append(
            f"team: hz/state was rewritten: {(tip or 'deleted')[:12]} does not descend from "
            f"{last[:12]} fetched last; {len(dropped)} receipt(s) of this machine it dropped "
            "are pushed again. Protect hz/state from force-push and deletion (docs/team.md)"
        )
        if dropped:
            outbox = self.outbox
            waiting = {str(record.get("id")) for _, record in outbox.pending()}
            outbox.set_again(outbox.again() | {str(r.get("id")) for r in dropped})
            outbox.put([r for r in dropped if str(r.get("id")) not in waiting])
        return {
            "at": format_ts(self.sessions.clock()),
            "from": last,
            "to": tip,
            "dropped": len(dropped),
        }

    def leases_seen(self, leases: dict[str, Lease | None]) -> dict[str, int]:
        """The highest token any lease of each team id was seen with, now or by this
        home before (``<home>/team/leases-seen.json``, updated here). Leases only go up:
        with the admitted receipts' tokens it is the floor a new holder's token starts
        above, so an unreadable or deleted lease never lowers it; and where a lease is
        readable now it is the ceiling above which a receipt is one no lease granted
        (quarantined). Where none is readable there is no ceiling: this home may not
        have seen the tokens granted since."""
        path = self.root / "leases-seen.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        seen = {str(k): int(v) for k, v in data.items()} if isinstance(data, dict) else {}
        for tid, lease in leases.items():
            if lease is not None:
                seen[tid] = max(seen.get(tid, 0), lease.token)
        if seen != data:
            ensure_private_dir(self.root)
            write_atomic(path, json.dumps(seen, sort_keys=True).encode())
        return seen

    def _decide(self, now: datetime, git: Git, report: _Report) -> None:
        team = self.sessions.settings.team
        updates: list[tuple[str, str, str | None]] = []
        running: dict[str, int] = {}
        written: dict[str, tuple[str, Lease]] = {}
        planned: list[tuple[str, str | None, Lease]] = []
        for member in self.members.values():
            commit, lease = self.leases.get(member.team, (None, None))
            done = self.received.get(member.team, set())
            floor = self.floors.get(member.team, 0)
            ahead = self.unplaced.get(member.team)
            live = ahead is not None and not _free(ahead, now, team.interval, team.max_skew)
            if ahead is not None and not live:
                floor = max(floor, ahead.token)  # out of force: a take goes above it
            decision = decide(
                lease,
                me=self.me,
                machine=self.machine,
                owner=member.owner,
                delegates=member.delegates,
                now=now,
                interval=team.interval,
                skew=team.max_skew,
                busy=self._busy(member.local),
                unsettled=tuple(
                    k for k in (lease.open if lease else ()) if not member.settled(k, done, now)
                ),
                grace=team.orphan_grace,
                floor=floor,
            )
            if not self.online:
                if (
                    lease is not None
                    and lease.held_by(self.me, self.machine)
                    and not lease.expired(now, -team.max_skew)
                ):
                    self.held[member.team] = lease.token
                continue
            if lease is not None and not lease.held_by(self.me, self.machine):
                self._notice(member, lease, done, now, report)
            if decision.new is None:
                continue
            if ahead is not None and (live or _under(decision.new, ahead)):
                report.notices.append(_unplaced_notice(member.name, ahead, decision.new, live))
                continue
            planned.append((member.team, commit, decision.new))
            if decision.runs:
                running[LEASE_PREFIX + member.team] = decision.new.token
            self.changes.append({"team": member.team, "action": decision.action})
        if not planned:
            return
        made = git.lease_commits([lease.to_message() for _, _, lease in planned])
        for (tid, commit, lease), new in zip(planned, made, strict=True):
            updates.append((LEASE_PREFIX + tid, new, commit))
            written[tid] = (new, lease)
        try:
            pushed = git.push(updates)
        except HeinzelError as error:
            report.errors.append({"id": "team", "code": error.code, "message": error.message})
            return
        self.stats.lease_pushes += 1
        self._declined(pushed.declined, report)
        self._taken(pushed.accepted)
        for ref, token in running.items():
            if ref in pushed.accepted:
                self.held[ref.removeprefix(LEASE_PREFIX)] = token
        for tid, (commit, lease) in written.items():
            if LEASE_PREFIX + tid in pushed.accepted:
                self.leases[tid] = (commit, lease)
        self.leases_seen(  # a token this home granted is one it has seen
            {
                tid: lease
                for tid, (_, lease) in written.items()
                if LEASE_PREFIX + tid in pushed.accepted
            }
        )
        git.track_leases(
            {tid: c for tid, (c, _) in written.items() if LEASE_PREFIX + tid in pushed.accepted}
        )
        self.stats.lease_conflicts += len(set(pushed.rejected) - set(pushed.declined))

    def _declined(self, declined: Mapping[str, str], report: _Report) -> None:
        """Pushes the server's hook refused (`heinzel.team.hook`) reach the person: each
        is the tick's error (HZH480) with the hook's reason and how to fix it, and is kept
        for ``hz team status`` until a push of that ref takes."""
        names = {m.team: m.name for m in self.members.values()}
        kept = {
            d["ref"]: d
            for d in self.remote_state().get("declined") or []
            if isinstance(d, dict) and d.get("ref") not in declined
        }
        for ref, reason in sorted(declined.items()):
            error = declined_error(ref, reason, names.get(ref.removeprefix(LEASE_PREFIX)))
            report.errors.append({"id": "team", "code": error.code, "message": error.message})
            report.notices.append(f"team: {error.message}; fix: {error.hint}")
            kept[ref] = {
                "ref": ref,
                "reason": reason,
                "message": error.message,
                "hint": error.hint,
                "at": format_ts(self.sessions.clock()),
            }
        self._remote_state(declined=list(kept.values()))

    def _taken(self, refs: Iterable[str]) -> None:
        """Refs a push just landed: the hook's refusals of them are over."""
        known = self.remote_state().get("declined") or []
        kept = [d for d in known if isinstance(d, dict) and d.get("ref") not in set(refs)]
        if kept != known:
            self._remote_state(declined=kept)

    def _notice(
        self, member: Member, lease: Lease, done: set[str], now: datetime, report: _Report
    ) -> None:
        """A lease this daemon would take but may not (blocked) is said in the tick's
        notices, with its cause and next step: a tick that runs nothing says why."""
        state = self.lease_state(member, lease, done, now)
        if state["state"] in ("blocked", "overlong"):
            report.notices.append(
                f"team {member.name}: lease {state['state']}: {state['cause']}; "
                f"next: {state['next']}"
            )

    def _busy(self, local: str) -> bool:
        row = self.sessions.index.db.execute(
            "SELECT 1 FROM turns WHERE heinzel = ? AND ended_at IS NULL LIMIT 1", [local]
        ).fetchone()
        return row is not None

    def admit(
        self, heinzel: str, wakes: Sequence[Wake], resumes: Sequence[tuple[str, str]]
    ) -> tuple[list[Wake], list[tuple[str, str]]]:
        """A team Heinzelmännchen's wakes and resumes run only under its lease, and a
        slot with a receipt on ``hz/state`` is not run again (its open turn is
        superseded). Everything else passes unchanged."""
        member = self.members.get(heinzel)
        if member is None:
            return list(wakes), list(resumes)
        if member.team not in self.held:
            lease = self.leases.get(member.team, (None, None))[1]
            if self.online and lease is not None and not lease.held_by(self.me, self.machine):
                # another holder runs it now: a turn of ours left open (killed after
                # turn.started) could never leave its receipts; end it
                return [], [(turn, "superseded") for turn, _ in resumes]
            return [], []
        done = self.received.get(member.team, set())
        kept = [w for w in wakes if team_key(w.key, heinzel, member.team) not in done]
        if kept:
            self.claims[member.team] = (
                heinzel,
                [team_key(w.key, heinzel, member.team) for w in kept],
            )
        turned: list[tuple[str, str]] = []
        for turn, woken_by in resumes:
            row = self.sessions.index.db.execute(
                "SELECT key FROM turns WHERE id = ?", [turn]
            ).fetchone()
            key = team_key(str(row[0]), heinzel, member.team) if row and row[0] else None
            turned.append((turn, "superseded" if key in done else woken_by))
        return kept, turned

    def claim(self, report: _Report, heinzels: Sequence[str]) -> set[str]:
        """Write the keys of the wakes `admit` let through that run this tick (of
        ``heinzels``: after the busy and the wake-limit filters) into their leases'
        ``open`` claims, in one push, before any turn starts; claims of slots a slot
        claimed now supersedes are settled in the same write. The local ids whose claim
        did not take (the lease moved, or the remote is out of reach), whose new wakes
        must wait. A wake deferred here is not claimed: a later tick claims it or a later
        slot it coalesces into."""
        running = set(heinzels)
        wanted = {tid: claim for tid, claim in self.claims.items() if claim[0] in running}
        self.claims = {}
        now = self.sessions.clock()
        refused: set[str] = set()
        updates: list[tuple[str, str, str | None]] = []
        written: dict[str, tuple[str, str, Lease]] = {}
        planned: list[tuple[str, str, str, Lease]] = []
        git, machine = self.git, self.machine
        for tid, (local, keys) in wanted.items():
            commit, lease = self.leases.get(tid, (None, None))
            if (
                not self.online
                or lease is None
                or commit is None
                or not lease.held_by(self.me, machine)
            ):
                refused.add(local)
                continue
            member = self.members[local]
            done = self.received.get(tid, set()) | set(keys)
            kept = {k for k in lease.open if not member.settled(k, done - {k}, now)}
            new = replace(lease, open=tuple(sorted({*kept, *keys})))
            if new.open != lease.open:
                planned.append((tid, local, commit, new))
        if not planned:
            return refused
        shas = git.lease_commits([new.to_message() for _, _, _, new in planned])
        for (tid, local, commit, new), sha in zip(planned, shas, strict=True):
            updates.append((LEASE_PREFIX + tid, sha, commit))
            written[tid] = (local, sha, new)
        try:
            pushed = git.push(updates)
        except HeinzelError as error:
            report.errors.append({"id": "team", "code": error.code, "message": error.message})
            return refused | {local for local, _, _ in written.values()}
        self.stats.lease_pushes += 1
        for tid, (local, made, new) in written.items():
            if LEASE_PREFIX + tid in pushed.accepted:
                self.leases[tid] = (made, new)
            else:
                refused.add(local)
        git.track_leases(
            {
                tid: made
                for tid, (_, made, _) in written.items()
                if LEASE_PREFIX + tid in pushed.accepted
            }
        )
        self.stats.lease_conflicts += len(set(pushed.rejected) - set(pushed.declined))
        self._declined(pushed.declined, report)
        self._taken(pushed.accepted)
        crash_at("claimed")  # HZ_CRASH_AT=at:claimed: claims pushed, no turn started
        return refused

    def started_data(self, heinzel: str) -> dict[str, Any] | None:
        """What ``turn.started`` of a team turn records: the lease's fencing token."""
        member = self.members.get(heinzel)
        if member is None or member.team not in self.held:
            return None
        return {"fencing": self.held[member.team]}

    def after(self, report: _Report) -> None:
        """Copy the tick's receipt-grade events into the outbox and push it."""
        if not self.members and not self.outbox.pending():
            return
        self._collect()
        self._flush(report)
        report.team = {**asdict(self.stats), "leases": self.changes}

    # -- receipts --------------------------------------------------------------------

    def _collect(self) -> None:
        outbox = self.outbox
        cursor = outbox.cursor()
        records: list[dict[str, Any]] = []
        moved = dict(cursor)
        for member in self.members.values():
            path = self.sessions.home.spine_path(member.local)
            if not path.exists():
                continue
            after = cursor.get(member.local, 0)
            started: dict[str, dict[str, Any]] = {}
            drafts: dict[str, str] = {}
            versions: dict[int, str] = {}
            for event, carried in _expanded(read_events(path)):  # a line may carry events
                if event.kind not in _RECEIPT_KINDS:
                    continue
                if event.kind == "turn.started" and event.turn:
                    started[event.turn] = {**event.data, "key": event.key}
                if event.kind == "step.started" and event.turn in started:
                    if event.data.get("step") == "think" and event.data.get("input"):
                        started[event.turn]["gathered"] = str(event.data["input"])
                    continue
                if event.kind in ("contract.approved", "contract.amended"):
                    versions[int(event.data.get("version") or 0)] = str(
                        event.data.get("fingerprint") or ""
                    )
                if event.seq <= after:
                    continue
                if event.kind == "draft.placed" and event.turn:
                    drafts[event.turn] = str(event.data.get("hash") or "")
                begun = started.get(event.turn or "", {})
                if event.kind in _FINAL and event.turn and begun.get("gathered"):
                    inputs = _input_fps(self.sessions, member.local, event.turn, begun)
                    begun = {**begun, "inputs": inputs}
                token = begun.get("fencing")
                moved[member.local] = event.seq
                if (
                    event.kind in _FINAL
                    and event.data.get("reason") == "superseded"
                    and self.held.get(member.team) != token
                ):
                    continue  # ended because another holder runs it: nothing to say
                late = event.kind in ("approval.observed", "contract.approved", "contract.amended")
                if late and not isinstance(token, int):
                    # collected whenever this daemon ticks: the token this machine held
                    # at its time, else none (a person's act needs no lease)
                    token = self._held_at(member.team, event.ts)
                if not isinstance(token, int) and member.team not in self.held:
                    continue  # not a team turn of ours, and we do not run it now
                record = from_event(
                    event,
                    local_id=member.local,
                    team=member.team,
                    by=self.me,
                    machine=self.machine,
                    token=int(token) if isinstance(token, int) else self.held.get(member.team, 0),
                    started=begun,
                    contract_fp=_ran_under(begun, versions) or member.fingerprint,
                    draft_hash=drafts.get(event.turn or "") or None,
                    carried=carried,
                )
                if record is not None and not (
                    record["kind"] == "turn.finished" and begun.get("cause") == "created"
                ):
                    records.append(record)
        outbox.put(records)
        outbox.advance(moved)

    def _held_at(self, team: str, ts: str) -> int:
        """The token this machine held for ``team`` at ``ts`` by the lease history, else 0."""
        try:
            grant = held_at(self.grants.get(team, {}), format_ts(parse_ts(ts)))
        except ValueError:
            return 0
        if grant is None or grant.holder != self.me or grant.machine not in (None, self.machine):
            return 0
        return grant.token

    def _flush(self, report: _Report) -> None:
        if not self.online or not self.outbox.pending():
            return
        current = lease_grants({t: lease for t, (_, lease) in self.leases.items()})
        grants = {t: dict(g) for t, g in self.grants.items()}
        for tid, grant in current.items():
            grants.setdefault(tid, {})[grant.token] = grant
        try:
            publish(
                self.git,
                self.outbox,
                roster=self.roster(),
                grants=grants,
                retries=self.sessions.settings.team.push_retries,
                me=self.me,
                stats=self.stats,
                again=self.outbox.again(),
            )
        except HeinzelError as error:
            report.errors.append({"id": "team", "code": error.code, "message": error.message})
            if error.code == "HZH480":
                report.notices.append(f"team: {error.message}; fix: {error.hint}")
                self._remote_state(
                    declined=[
                        *[
                            d
                            for d in self.remote_state().get("declined") or []
                            if isinstance(d, dict) and d.get("ref") != STATE_REF
                        ],
                        {
                            "ref": STATE_REF,
                            "reason": error.message,
                            "message": error.message,
                            "hint": error.hint,
                            "at": format_ts(self.sessions.clock()),
                        },
                    ]
                )
        else:
            self._taken([STATE_REF])
        if not self.outbox.pending() and self.outbox.again():
            self.outbox.set_again(frozenset())  # every receipt to push again has left

    def check_asked(self, ref: str) -> None:
        """An asked turn (``hz heinzel wake``) of a team Heinzelmännchen runs only on the
        machine that holds its lease as last fetched (its receipts then leave as team
        receipts under that lease's token); elsewhere it is refused (HZH304), so a member
        without the lease never drafts a team slot whose receipts could not leave."""
        row = self.sessions.resolve(ref)
        member = self.local_members().get(str(row["id"]))
        if member is None:
            return
        git = self.git
        known = git.leases() if (git.mirror / "HEAD").exists() else {}
        parsed = {tid: (c, Lease.from_message(m)) for tid, (c, m) in known.items()}
        lease = self.honoured(git, parsed).get(member.team, ("", None))[1]
        now = self.sessions.clock()
        if (
            lease is not None
            and lease.held_by(self.me, self.machine)
            and not lease.expired(now, timedelta(0))
        ):
            return
        holder = f"{lease.holder} on {lease.machine or 'an unnamed machine'}" if lease else None
        raise HeinzelError(
            "HZH304",
            f"{member.name} is a team Heinzelmännchen and this machine does not hold its "
            f"lease ({'held by ' + holder if holder else 'nobody holds it yet'})",
            "ask on the machine that holds it (`hz team status` names it), or let this "
            "machine's daemon take the lease first (`hz system daemon tick`)",
        )

    # -- reading -----------------------------------------------------------------------

    def lint(self, notices: list[str] | None = None) -> list[str]:
        """Fetch (a rewrite found is announced in ``notices`` and survived), then lint
        the whole ``hz/state`` branch and the lease refs."""
        git = self.git
        self.fetch(git, notices if notices is not None else [])
        read = {tid: (c, Lease.from_message(m)) for tid, (c, m) in git.leases().items()}
        leases = {tid: lease for tid, (_, lease) in self.honoured(git, read).items()}
        seen = self.leases_seen(leases)
        refused = [
            f"{ROSTER_PATH} (commit {r.get('commit', '')[:12]}): HZH482: {r.get('reason')}; "
            "the roster before it stays in force"
            for r in self.roster_state().refused
        ]
        unhonoured = [
            f"lease {tid}: HZH485: not signed by {lease.holder[:40]}'s key on the roster "
            "(not honoured)"
            for tid, (_, lease) in read.items()
            if lease is not None and leases.get(tid) != lease
        ]
        return [
            *refused,
            *unhonoured,
            *lint_branch(
                git,
                self.roster(),
                leases,
                seen,
                grants=lease_grants(leases),
                climb=_soft(seen, leases),
                unsigned=self.unsigned(),
            ),
        ]

    def overview(self) -> dict[str, dict[str, Any]]:
        """Per local team Heinzelmännchen (by local id): its team id, lease holder,
        machine and token, the lease's state, open claims, cause and next step
        (`lease_state`), and last receipt, as last fetched into the mirror (no network)."""
        git = self.git
        members = self.local_members()
        fetched = (git.mirror / "HEAD").exists()
        leases = git.leases() if fetched else {}
        teams = [m.team for m in members.values()]
        last = last_receipts(git, teams) if fetched else {}
        now = self.sessions.clock()
        parsed = {t: (c, Lease.from_message(m)) for t, (c, m) in leases.items()}
        read = {t: lease for t, (_, lease) in self.honoured(git, parsed).items()}
        seen = self.leases_seen(read)
        grants, soft = lease_grants(read), _soft(seen, read)
        done = (
            scan(
                git,
                teams,
                now,
                self.roster(),
                seen,
                leases=grants,
                climb=soft,
                unsigned=self.unsigned(),
            ).keys
            if fetched
            else {}
        )
        found: dict[str, dict[str, Any]] = {}
        for member in members.values():
            lease = read.get(member.team)
            state = (
                self.lease_state(member, lease, done.get(member.team, set()), now) if lease else {}
            )
            found[member.local] = {
                "team": member.team,
                "holder": lease.holder if lease else None,
                "machine": lease.machine if lease else None,
                "token": lease.token if lease else None,
                "expired": lease.expired(now, timedelta(0)) if lease else None,
                **state,
                "last_receipt": last.get(member.team),
            }
        return found

    def status(self) -> dict[str, Any]:
        """The remote, the outbox, and every lease as last fetched (no network): its
        holder, token, open claims and state (`lease_state`), with a cause and a next
        step when it is not simply held."""
        git = self.git
        fetched = (git.mirror / "HEAD").exists()
        leases = git.leases() if fetched else {}
        members = {m.team: m for m in self.local_members().values()}
        now = self.sessions.clock()
        parsed = {t: (c, Lease.from_message(m)) for t, (c, m) in leases.items()}
        honoured = self.honoured(git, parsed)
        read = {t: lease for t, (_, lease) in honoured.items()}
        seen = self.leases_seen(read)
        listed = self.team_roster()
        grants, soft = lease_grants(read), _soft(seen, read)
        found = (
            scan(
                git,
                members,
                now,
                self.roster(),
                seen,
                leases=grants,
                climb=soft,
                unsigned=self.unsigned(),
            )
            if fetched
            else None
        )
        done = found.keys if found else {}
        shown = []
        for tid, (_, message) in sorted(leases.items()):
            lease = Lease.from_message(message)
            if lease is None:
                continue
            member = members.get(tid)
            state = self.lease_state(member, lease, done.get(tid, set()), now)
            if read.get(tid) != lease:
                state = {
                    **state,
                    "state": "unsigned",
                    "cause": f"its commit is not signed by {lease.holder[:40]}'s key on the "
                    "roster (HZH485): not honoured",
                    "next": "the owner's daemon, or a delegate's, takes it at its next tick",
                }
                if tid in self.unplaced:  # a roster key signed it: nobody writes under it
                    state["next"] = (
                        f"no lease is written under it until it expires ({lease.expiry[:40]}, "
                        "HZH488); then the owner's or a delegate's daemon takes the next token"
                    )
            shown.append(
                {
                    "team": tid,
                    "name": member.name if member else None,
                    "holder": lease.holder,
                    "token": lease.token,
                    "expiry": lease.expiry,
                    "machine": lease.machine,
                    "machine_name": listed.machine_name(lease.holder, lease.machine)
                    if listed
                    else None,
                    "mine": lease.held_by(self.me, self.machine) and state["state"] == "held",
                    **state,
                }
            )
        remote = self.remote_state()
        declined = {
            str(d.get("ref")): d for d in remote.get("declined") or [] if isinstance(d, dict)
        }
        for row in shown:
            refused = declined.get(LEASE_PREFIX + row["team"])
            if refused is not None:
                row["refused"] = refused["reason"]
                row["next"] = f"the hook refuses its lease pushes: {refused['hint']}"
        held = [
            row["name"] or row["team"]
            for row in shown
            if row["holder"] == self.me and row["machine"] in (None, self.machine)
        ]
        pending = len(self.outbox.pending())
        meanwhile = None
        if remote.get("unreachable_since"):
            meanwhile = (
                f"{pending} receipt(s) wait in the outbox; "
                + (
                    f"this machine resumes the open turns of {', '.join(held)} until its "
                    "leases expire, and starts no new team slot"
                    if held
                    else "this machine runs no team slot"
                )
                + "; the other members' daemons run what their leases hold, and a delegate "
                "takes this machine's leases once they expire"
            )
        roster, signing = self.roster_state(), self.signing_refusal()
        return {
            "repository": self.sessions.settings.team.repository,
            "handle": self.me,
            "machine": self.machine,
            "roster": {
                "owner": roster.roster.owner if roster.roster else None,
                "commit": roster.commit,
                "refused": roster.refused,
                "signing": (
                    {"code": signing.code, "message": signing.message, "hint": signing.hint}
                    if signing is not None
                    else None
                ),
            },
            "remote": {
                "reached": remote.get("reached"),
                "unreachable_since": remote.get("unreachable_since"),
                "error": remote.get("error"),
                "meanwhile": meanwhile,
                "rewrite": remote.get("rewrite"),
                "declined": list(declined.values()),
            },
            "outbox": pending,
            "refused": self.outbox.refused(),
            "refusals": self.refusals(),
            "quarantined": [asdict(q) for q in found.quarantined] if found else [],
            "leases": shown,
            "at": format_ts(now),
        }

    def refusals(self) -> list[dict[str, Any]]:
        """Each refused receipt with its reason and whether it could be pushed now
        (``repushable``: the lint admits it with today's roster and its writer held its token
        at its time by the lease history as last fetched; `repush` puts those back)."""
        git = self.git
        leases = git.leases() if (git.mirror / "HEAD").exists() else {}
        read = {tid: Lease.from_message(message) for tid, (_, message) in leases.items()}
        grants = history((), lease_grants(read))
        roster = self.roster()
        found = []
        for refusal in self.outbox.refusals():
            record = refusal.pop("record")
            fine = isinstance(record, dict) and not lint_record(record, roster)
            if fine and isinstance(record, dict):
                fine = judge(record, grants.get(str(record.get("team")), {})) is None
            found.append({**refusal, "repushable": fine})
        return found

    def repush(self) -> list[str]:
        """Put every refused receipt that could be pushed now back into the outbox (the
        next tick pushes it); their file names."""
        moved = [r["file"] for r in self.refusals() if r["repushable"]]
        for name in moved:
            self.outbox.unrefuse(name)
        return moved

    def lease_state(
        self, member: Member | None, lease: Lease, done: set[str], now: datetime
    ) -> dict[str, Any]:
        """What a lease means now: ``state`` (``held``; ``expired``: held past its
        renewal; ``blocked``: expired with unsettled claims, waiting out
        ``orphan_grace``), its unsettled ``open`` claims, and for any but ``held`` its
        ``cause`` and ``next`` step."""
        team = self.sessions.settings.team
        unsettled = [k for k in lease.open if member is None or not member.settled(k, done, now)]
        found: dict[str, Any] = {"state": "held", "open": unsettled, "cause": None, "next": None}
        if lease.overlong(now, team.interval, team.max_skew):
            return {
                **found,
                "state": "overlong",
                "cause": f"{lease.holder}'s lease runs until {lease.expiry}, further than two "
                "intervals and [team] max_skew ahead (set by hand, or a clock far off): "
                "it is treated as expired",
                "next": "the owner's daemon, or a delegate's, takes it at its next tick; "
                f"ask {lease.holder} who wrote it",
            }
        if not lease.expired(now, team.max_skew):
            return found
        if unsettled and not lease.expired(now, team.max_skew + team.orphan_grace):
            until = format_ts(parse_ts(lease.expiry) + team.max_skew + team.orphan_grace)
            return {
                **found,
                "state": "blocked",
                "cause": f"{lease.holder} claimed {len(unsettled)} slot(s) whose receipts are "
                f"not on hz/state and has not renewed the lease since {lease.expiry}",
                "next": f"start {lease.holder}'s daemon: it pushes those receipts and renews; "
                f"else the lease is taken after [team] orphan_grace, at {until}",
            }
        return {
            **found,
            "state": "expired",
            "cause": f"{lease.holder} has not renewed it since {lease.expiry} "
            "(its daemon stopped, or it handed the lease back)",
            "next": "the owner's daemon, or a delegate's while the owner is away, "
            "takes it at its next tick",
        }


def signing_required(owner: str | None, me: str) -> HeinzelError:
    """HZH483: signing is required (a roster, or a change of it) and ``[team]
    signing_key`` is not set; the hint says how to make a key and whom to give it."""
    return HeinzelError(
        "HZH483",
        (
            f"the team's roster on hz/state (owner {owner}) requires signed commits and "
            "[team] signing_key is not set: nothing of this machine is pushed"
            if owner
            else "the roster is changed only by signed commits and [team] signing_key is not set"
        ),
        "run `hz team key`: it makes an ed25519 key with ssh-keygen and sets [team] "
        "signing_key"
        + (
            f"; give the line it prints to {owner} (`hz team roster add {me} KEY`)" if owner else ""
        ),
    )


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
    if _MACHINE.fullmatch(found):
        return found
    made = "mc-" + secrets.token_hex(10)
    ensure_private_dir(root)
    write_atomic(path, made.encode())
    return made


def _free(lease: Lease, now: datetime, interval: timedelta, skew: timedelta) -> bool:
    """Out of force: expired, or further ahead than any holder writes (`decide`'s rule),
    or with an expiry that is not a time (nobody can hold it)."""
    try:
        return lease.expired(now, skew) or lease.overlong(now, interval, skew)
    except ValueError:
        return True


def _under(new: Lease, ahead: Lease) -> bool:
    """Whether writing ``new`` over ``ahead`` would lower the token, or give its token to
    another holder."""
    return new.token < ahead.token or (
        new.token == ahead.token and (new.holder, new.machine) != (ahead.holder, ahead.machine)
    )


def _unplaced_notice(name: str, ahead: Lease, new: Lease, live: bool) -> str:
    """The tick's notice for a lease it does not write: the remote's lease is signed by a
    roster key but not verified here (not its holder's key, no seen mark placed here)."""
    holder = f"{ahead.holder[:40]} on {(ahead.machine or 'an unnamed machine')[:40]}"
    until = f"until it expires ({ahead.expiry[:40]})" if live else "(a take goes above it)"
    return (
        f"team {name}: HZH488: the lease on the remote ({holder}, token {ahead.token}) is "
        "signed by a roster key but not verified on this machine; this machine writes no "
        f"lease (token {new.token}) under it {until}"
    )


def _soft(seen: Mapping[str, int], leases: Mapping[str, Lease | None]) -> set[str]:
    """The teams this home saw a lease of whose ref is unreadable or deleted now: their
    ceiling is the highest token seen, raised only by ``lease.granted`` lines one at a
    time (`heinzel.team.receipts.sort_records`)."""
    return {tid for tid in seen if leases.get(tid) is None}


def lease_grants(leases: Mapping[str, Lease | None]) -> dict[str, Grant]:
    """Each lease that says when its token was granted, as the history's newest entry."""
    return {
        tid: Grant(lease.token, lease.holder, lease.machine, lease.since)
        for tid, lease in leases.items()
        if lease is not None and lease.since
    }


def _input_fps(
    sessions: Sessions, local: str, turn: str, started: dict[str, Any]
) -> dict[str, str]:
    """``{input name: fingerprint}`` of what a turn's gather read: the spine carries only
    the hash of the gather's result (``step.started{step: think, input}``), the result
    itself (each staged input with its ``fingerprint``) is in the turn's body. Empty when
    the body is gone (pruned)."""
    try:
        gathered = DiskBody(Bodies(sessions.home.session_dir(local))).get(
            turn, str(started["gathered"])
        )
    except (KeyError, OSError, ValueError, LedgerError):
        return {}
    items = gathered.get("inputs") if isinstance(gathered, dict) else None
    return {
        str(i.get("name")): str(i["fingerprint"])
        for i in items or ()
        if isinstance(i, dict) and i.get("fingerprint")
    }


def _slot(key: str, team: str) -> datetime | None:
    """The slot a team slot key (``<team id>@<timestamp>``) names, else None."""
    head, _, rest = key.partition("@")
    if head != team or not rest[:1].isdigit():
        return None
    try:
        return parse_ts(rest)
    except ValueError:
        return None


def _ran_under(started: dict[str, Any], versions: dict[int, str]) -> str | None:
    """The fingerprint of the contract version a turn's ``turn.started`` pinned."""
    pins = started.get("pins")
    version = pins.get("contract_version") if isinstance(pins, dict) else None
    return versions.get(int(version)) or None if isinstance(version, int) else None


def _expanded(lines: Iterable[Event]) -> Iterator[tuple[Event, bool]]:
    """Each event of ``lines`` with what a line carries written out before it
    (`machines.stores.journal.expand_carried`), and whether it is such a carried event (it
    shares its carrier's seq, so its receipt is named by its kind too)."""
    for line in lines:
        events = list(expand_carried((line,)))
        for n, event in enumerate(events):
            yield event, n < len(events) - 1


def _newer_members(quarantined: Sequence[Quarantined], report: _Report) -> None:
    """One notice per member whose receipts a newer hz wrote (a later receipt ``v``): kept
    on ``hz/state``, counted for nothing here (`heinzel.team.receipts.RECEIPT_VERSION`)."""
    newer: dict[str, str] = {}
    for line in quarantined:
        if line.problem.startswith(NEWER):
            newer.setdefault(line.by or "someone", line.problem.removeprefix(NEWER).strip())
    for member, versions in sorted(newer.items()):
        report.notices.append(
            f"team: {member} runs a newer hz {versions}: its receipts are kept on hz/state "
            "and not counted here; upgrade hz"
        )
