"""What ``hz team`` asks of a home's `Team`: the lint of the whole ``hz/state`` branch,
the status (the remote, the outbox, every lease with its state, cause and next step),
the overview per local team Heinzelmännchen, the refused receipts and their repush,
and a change of the roster by its owner."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from datetime import datetime, timedelta
from typing import Any

from heinzel.errors import HeinzelError
from heinzel.team.git import LEASE_PREFIX, STATE_REF, declined_error
from heinzel.team.lease import Lease
from heinzel.team.members import MACHINE_ID
from heinzel.team.placement import Placement, lease_grants, soft_teams
from heinzel.team.receipts import history, judge, lint_record
from heinzel.team.roster import ROSTER_PATH, Roster, parse_key
from heinzel.team.signing import public_key
from heinzel.team.state import Scan, last_receipts, lint_branch
from heinzel.team.trust import signing_required
from ledger.event import format_ts

__all__ = ["Verbs"]


_HANDLE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}")


class Verbs(Placement):
    """The `hz team` verbs of a home's `Team`."""

    __slots__ = ()

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
                climb=soft_teams(seen, leases),
                unsigned=self.unsigned(),
            ),
        ]

    def _as_fetched(
        self, teams: Iterable[str], now: datetime, fetched: bool
    ) -> tuple[dict[str, tuple[str, str]], dict[str, Lease | None], Scan | None]:
        """The mirror as last fetched (no network): its lease refs (team id -> commit and
        message), the leases honoured (`honoured`; the tokens seen noted), and the receipts
        of ``teams`` scanned with them (None before the first fetch)."""
        git = self.git
        leases = git.leases() if fetched else {}
        parsed = {t: (c, Lease.from_message(m)) for t, (c, m) in leases.items()}
        read = {t: lease for t, (_, lease) in self.honoured(git, parsed).items()}
        seen = self.leases_seen(read)
        if not fetched:
            return leases, read, None
        return leases, read, self.scanned(git, teams, now, read, seen)

    def overview(self) -> dict[str, dict[str, Any]]:
        """Per local team Heinzelmännchen (by local id): its team id, lease holder,
        machine and token, the lease's state, open claims, cause and next step
        (`lease_state`), and last receipt, as last fetched into the mirror (no network)."""
        git = self.git
        members = self.local_members()
        fetched = (git.mirror / "HEAD").exists()
        teams = [m.team for m in members.values()]
        last = last_receipts(git, teams) if fetched else {}
        now = self.sessions.clock()
        _, read, scanned = self._as_fetched(teams, now, fetched)
        done = scanned.keys if scanned else {}
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
        members = {m.team: m for m in self.local_members().values()}
        now = self.sessions.clock()
        leases, read, found = self._as_fetched(members, now, fetched)
        listed = self.team_roster()
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
            if not _HANDLE.fullmatch(name) or not MACHINE_ID.fullmatch(machine):
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
