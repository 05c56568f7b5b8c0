"""The leases of this home's team Heinzelmännchen: the tokens seen (the floor a new
holder starts above), what a lease means now (`lease_state`), each tick's decision
per lease (`heinzel.team.lease.decide`) written in one push of compare-and-swap
updates, and the lease history's ``lease.granted`` lines of the leases held here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from heinzel.errors import HeinzelError
from heinzel.team.git import LEASE_PREFIX, Git
from heinzel.team.lease import Lease, decide
from heinzel.team.members import Member, Report
from heinzel.team.receipts import Grant, grant_record
from heinzel.team.remote import Remote
from heinzel.team.state import Scan, scan
from ledger.event import format_ts, parse_ts
from ledger.files import ensure_private_dir, write_atomic

__all__ = ["Placement", "lease_grants", "soft_teams"]


class Placement(Remote):
    """The leases a home's `Team` reads, decides and writes."""

    __slots__ = ()

    def scanned(
        self,
        git: Git,
        teams: Iterable[str],
        now: datetime,
        read: Mapping[str, Lease | None],
        seen: Mapping[str, int],
    ) -> Scan:
        """`scan` of ``teams``' receipts on the fetched ``hz/state``, judged by the leases
        ``read`` (honoured) and the tokens ``seen`` (`leases_seen`): the tick's hook and
        ``hz team status`` read them alike."""
        return scan(
            git,
            teams,
            now,
            self.roster(),
            seen,
            leases=lease_grants(read),
            climb=soft_teams(seen, read),
            unsigned=self.unsigned(),
        )

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

    def _decide(self, now: datetime, git: Git, report: Report) -> None:
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

    def _notice(
        self, member: Member, lease: Lease, done: set[str], now: datetime, report: Report
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


def soft_teams(seen: Mapping[str, int], leases: Mapping[str, Lease | None]) -> set[str]:
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
