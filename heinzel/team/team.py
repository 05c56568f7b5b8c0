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

`Team` (`heinzel.team.team`) is built in layers, each a module that uses only those
below it: `heinzel.team.members` (`TeamBase`, the state they share),
`heinzel.team.trust` (the roster this home follows, signatures, leases honoured),
`heinzel.team.remote` (the fetch and what the remote said), `heinzel.team.placement`
(leases decided and written), `heinzel.team.push` (receipts into the outbox and out to
``hz/state``), `heinzel.team.verbs` (what ``hz team`` asks) and `heinzel.team.team`
(the tick's hook).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, replace
from datetime import timedelta
from typing import Any

from heinzel.errors import HeinzelError
from heinzel.session.sessions import Sessions
from heinzel.team.git import LEASE_PREFIX
from heinzel.team.lease import Lease
from heinzel.team.members import Report
from heinzel.team.push import Pushing
from heinzel.team.receipts import NEWER, Quarantined, team_key
from heinzel.team.verbs import Verbs
from machines.crashkit.crash import crash_at
from machines.keys import Wake

__all__ = ["Team"]


class Team(Verbs, Pushing):
    """The team hook of one home's tick (`heinzel.tick.tick.TeamHook`)."""

    __slots__ = ()

    @classmethod
    def configured(cls, sessions: Sessions) -> Team | None:
        """The team hook when ``[team] repository`` and ``handle`` are set, else None."""
        return cls(sessions) if sessions.settings.team.joined else None

    def before(self, report: Report) -> None:
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
            found = self.scanned(git, teams, now, read, seen)
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

    def claim(self, report: Report, heinzels: Sequence[str]) -> set[str]:
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

    def after(self, report: Report) -> None:
        """Copy the tick's receipt-grade events into the outbox and push it."""
        if not self.members and not self.outbox.pending():
            return
        self._collect()
        self._flush(report)
        report.team = {**asdict(self.stats), "leases": self.changes}

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


def _newer_members(quarantined: Sequence[Quarantined], report: Report) -> None:
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
