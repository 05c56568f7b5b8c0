"""The owner's "seen" mark on a delegate's lease, fetched by a home that never verified
that lease: the fencing defect `make soak-team` found as two hook refusals ("token 1
below the lease's 2", HZH480). Through the `hz` executable, with the roster's keys
(docs/team.md, "The roster on hz/state")."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from heinzel.team.lease import Decision, Lease, decide, owner_mark

from .test_claims import _leases
from .test_hook import _push
from .test_hostile_state import MONDAY, TEAM, TUESDAY, _git
from .test_roster import _signed_team
from .test_signing import _key
from .test_two_machines import CONTRACT, START, Machine, Two, finished_slots, ts

DAYS = [ts(START + timedelta(days=d, hours=9)).replace("Z", ".000Z") for d in range(4)]


@pytest.mark.parametrize("hook", [False, True], ids=["no-hook", "hook"])
def test_a_home_that_missed_the_delegates_take_does_not_write_under_it(
    tmp_path: Path, hook: bool
) -> None:
    """Ana's desktop takes the lease (token 1) on Monday and sleeps. Ben (delegate) takes
    it on Tuesday (token 2, signed by Ben) and runs the slot; Ana's laptop marks it "owner
    seen" (signed by Ana). The desktop then fetches both changes at once: it never saw
    Ben's lease, and the seen mark is Ana's, not its holder's. It must not take back its
    own token-1 lease under Ben's token 2: without a hook (as on GitHub) such a push
    lands and the desktop runs beside Ben; with the hook it is refused (HZH480). Over
    four days every slot runs exactly once, on one machine, and no tick errs."""
    remote = tmp_path / "team.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    subprocess.run(
        ["git", "-C", str(remote), "symbolic-ref", "HEAD", "refs/heads/main"], check=True
    )
    (tmp_path / "daily-digest.prose.md").write_text(CONTRACT, encoding="utf-8")
    laptop = Machine(tmp_path, "ana", remote, name="laptop")
    desktop = Machine(tmp_path, "ana", remote, name="desktop")
    ben = Machine(tmp_path, "ben", remote)
    for machine in (laptop, desktop, ben):
        machine.hz(START, "heinzel", "new", "--from", str(tmp_path / "daily-digest.prose.md"))
        machine.hz(START, "approve", "daily-digest")
    ana_key = _key(tmp_path, laptop, "ana")
    with desktop.config.open("a", encoding="utf-8") as config:
        config.write(f'signing_key = "{ana_key}"\n')
    ben_key = _key(tmp_path, ben, "ben")
    laptop.hz(START, "team", "roster", "add", "ben", str(ben_key.with_suffix(".pub")))
    if hook:
        laptop.hz(START, "team", "hook", str(remote))
    said: list[str] = []

    def tick(machine: Machine, day: int, hour: float) -> None:
        now = START + timedelta(days=day, hours=hour)
        report = json.loads(machine.hz(now, "system", "daemon", "tick", "--json").stdout)
        said.extend(json.dumps(e) for e in report.get("errors") or [])
        said.extend(n for n in report.get("notices") or [] if "HZH48" in n)

    tick(desktop, 0, 10)  # takes token 1, runs Monday's slot
    tick(laptop, 0, 10.5)  # verifies the desktop's lease: its other machine holds it
    tick(ben, 0, 11)
    tick(ben, 1, 9.5)  # the desktop's lease expired at 16:00: Ben takes token 2
    [lease] = _leases(remote)
    assert (lease["holder"], lease["token"]) == ("ben", 2)
    tick(laptop, 1, 10)  # Ana is back on her laptop: the seen mark, signed by Ana
    [lease] = _leases(remote)
    assert (lease["holder"], lease["token"], bool(lease["owner_seen"])) == ("ben", 2, True)
    tick(desktop, 1, 10.5)  # fetches both changes at once
    assert desktop.started() == [DAYS[0]]  # Ben ran Tuesday's slot: not a second time
    [lease] = _leases(remote)
    assert (lease["holder"], lease["token"]) == ("ben", 2), lease  # nothing written under it
    assert not said, said
    for day in (1, 2, 3):
        for hour, machine in ((11, ben), (11.5, desktop), (12, laptop), (17, ben)):
            tick(machine, day, hour)
    assert not said, said
    started = laptop.started() + desktop.started() + ben.started()
    assert sorted(started) == DAYS
    assert finished_slots(remote) == DAYS
    assert max(lease["token"] for lease in _leases(remote)) >= 3


def _signed_lease(remote: Path, lease: dict[str, object], key: Path) -> None:
    """Write ``refs/hz/lease/<TEAM>`` straight into the repository (no hook): a lease
    commit signed with ``key``, as a member with push access and a roster key could."""
    tree = _git(remote, "hash-object", "-t", "tree", "-w", "--stdin", stdin="")
    message = json.dumps(lease, sort_keys=True, separators=(",", ":"))
    commit = _git(
        remote,
        "-c",
        "gpg.format=ssh",
        "-c",
        f"user.signingkey={key}",
        "-c",
        "user.name=x",
        "-c",
        "user.email=x@example.invalid",
        "commit-tree",
        "-S",
        tree,
        "-m",
        message,
    )
    _git(remote, "update-ref", f"refs/hz/lease/{TEAM}", commit)


def test_a_lease_a_member_signed_in_anothers_name_is_not_honoured_nor_written_under(
    tmp_path: Path,
    two: Two,
) -> None:
    """Ana holds the lease (token 1). Ben, a member with push access and a roster key,
    writes a "seen" lease in Ana's name on another machine with token 2, signed with his
    own key, straight into the repository. Neither honours it (it is not its holder's,
    and a seen mark counts only signed by the owner), and while it is in force nobody
    writes a lease under it (HZH488: Ana's renewal would lower the token to 1); once it
    expired Ana takes the next token above it and runs Tuesday's slot. Ben runs nothing."""
    remote, ana, ben, ben_key = _signed_team(tmp_path, two)
    said: list[str] = []

    def tick(machine: Machine, hours: float) -> None:
        now = START + timedelta(hours=hours)
        report = json.loads(machine.hz(now, "system", "daemon", "tick", "--json").stdout)
        said.extend(json.dumps(e) for e in report.get("errors") or [])
        said.extend(report.get("notices") or [])

    tick(ana, 12)
    tick(ben, 13)
    [lease] = _leases(remote)
    assert (lease["holder"], lease["token"]) == ("ana", 1)
    forged = {
        **lease,
        "machine": "mc-" + "0" * 20,
        "token": 2,
        "expiry": ts(START + timedelta(hours=19)).replace("Z", ".000Z"),
        "owner_seen": ts(START + timedelta(hours=14)).replace("Z", ".000Z"),
    }
    _signed_lease(remote, forged, ben_key)
    tick(ana, 15)
    tick(ben, 15.5)
    assert _leases(remote) == [forged]  # nothing written under it
    waited = [n for n in said if "HZH488" in n]
    assert waited and "ana on mc-00000000000000000000, token 2" in waited[0]
    assert any("HZH485" in n for n in said)
    status = json.loads(ana.hz(START + timedelta(hours=16), "team", "status", "--json").stdout)
    [row] = status["leases"]
    assert row["state"] == "unsigned" and "HZH488" in row["next"]
    said.clear()
    tick(ana, 24 + 10)  # the forged lease expired at 19:00
    [lease] = _leases(remote)
    assert (lease["holder"], lease["token"]) == ("ana", 3)
    tick(ben, 24 + 11)
    assert not [s for s in said if "HZH488" in s or '"code"' in s], said
    assert ben.started() == []
    assert sorted(ana.started()) == [MONDAY, TUESDAY]
    assert finished_slots(remote) == [MONDAY, TUESDAY]


class TestFloor:
    """`decide` with a token seen since the holder's own (``floor``), and `owner_mark`."""

    OWN = Lease("ana", "2026-10-26T16:00:00.000Z", 1, machine="mc-desk")

    def _decide(self, now: datetime, floor: int) -> Decision:
        return decide(
            self.OWN,
            me="ana",
            machine="mc-desk",
            owner="ana",
            delegates=("ben",),
            now=now,
            interval=timedelta(hours=3),
            skew=timedelta(seconds=30),
            busy=False,
            floor=floor,
        )

    def test_a_holder_behind_a_higher_token_waits_then_takes_the_next(self) -> None:
        """Its own lease, while a higher token was granted since: no renewal under it;
        once it expired, a take with the next token above it (a new grant)."""
        live = datetime(2026, 10, 26, 15, 0, tzinfo=UTC)
        assert self._decide(live, 1).action == "renew"
        assert self._decide(live, 2) == Decision("none", None, False)
        late = self._decide(live + timedelta(hours=3), 2)
        assert late.action == "take" and late.new is not None
        assert (late.new.token, late.new.since) == (3, "2026-10-26T18:00:00.000Z")
        assert self._decide(live + timedelta(hours=3), 1).new == replace(
            self.OWN, expiry="2026-10-27T00:00:00.000Z"
        )

    def test_only_the_owners_key_makes_a_seen_mark_count(self) -> None:
        before = Lease("ana", "2026-10-26T16:00:00.000Z", 1)
        mark = Lease("ben", "2026-10-27T15:30:00.000Z", 2, owner_seen="2026-10-27T10:00:00Z")
        assert owner_mark(mark, before, "ana", "ana")
        assert owner_mark(mark, None, "ana", "ana")
        assert not owner_mark(mark, before, "ben", "ana")  # a member's, not the owner's
        assert not owner_mark(mark, before, "ana", None)  # no local contract names the owner
        assert not owner_mark(replace(mark, owner_seen=None), before, "ana", "ana")
        assert not owner_mark(replace(mark, holder="ana"), before, "ana", "ana")
        assert not owner_mark(mark, replace(before, token=3), "ana", "ana")  # token down


def test_the_hook_refuses_a_token_passed_to_another_holder_unraised(
    tmp_path: Path,
    two: Two,
) -> None:
    """With the hook, Ben holds token 2. A lease that hands token 2 to Ana, or to another
    machine of Ben's, is refused (two holders of one token); Ben's own renewal lands."""
    remote, ana, ben = two
    ana.hz(START, "team", "hook", str(remote))
    ana.hz(START + timedelta(hours=12), "system", "daemon", "tick")
    ben.hz(START + timedelta(days=1, hours=12), "system", "daemon", "tick")
    [lease] = _leases(remote)
    assert (lease["holder"], lease["token"]) == ("ben", 2)
    scratch = tmp_path / "scratch.git"
    subprocess.run(["git", "clone", "-q", "--mirror", str(remote), str(scratch)], check=True)
    tree = _git(scratch, "hash-object", "-t", "tree", "-w", "--stdin", stdin="")
    for other in ({"holder": "ana"}, {"machine": "mc-" + "1" * 20}):
        message = json.dumps({**lease, **other}, sort_keys=True, separators=(",", ":"))
        commit = _git(scratch, "commit-tree", tree, "-m", message)
        refused = _push(remote, scratch, f"+{commit}:refs/hz/lease/{TEAM}")
        assert refused.returncode != 0 and "token 2 is ben's on mc-" in refused.stderr
        assert "(a take raises it by one)" in refused.stderr
    assert _leases(remote) == [lease]
    shown = ben.hz(START + timedelta(days=1, hours=13), "system", "daemon", "tick", "--json")
    assert not json.loads(shown.stdout).get("errors")
    [renewed] = _leases(remote)
    assert (renewed["holder"], renewed["token"]) == ("ben", 2)
    assert renewed["expiry"] != lease["expiry"]
