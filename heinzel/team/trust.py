"""What this home trusts of the team repository: the roster it follows on ``hz/state``
(each change accepted only when signed by the owner before it), the handles the lint
admits, the allowed-signers file every fetch verifies with, the lines not signed by
their writer, whether this member may push at all (`signing_refusal`), and which
leases are honoured (signed by their holder, or a seen mark)."""

from __future__ import annotations

import json

from heinzel.errors import HeinzelError
from heinzel.team.git import HONOURED, VERIFIED_STATE, Git
from heinzel.team.lease import Lease, owner_mark, seen_only
from heinzel.team.members import TeamBase
from heinzel.team.roster import ROSTER_PATH, Roster, RosterState, follow
from heinzel.team.signing import public_key, unsigned_lines
from ledger.files import ensure_private_dir, write_atomic

__all__ = ["Trust", "signing_required"]


class Trust(TeamBase):
    """The roster, signatures and honoured leases of a home's `Team`."""

    __slots__ = ()

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
