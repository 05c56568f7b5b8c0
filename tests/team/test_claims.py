"""Claims settle: a lease's ``open`` list holds only the slots that ran, and a claim
whose slot was coalesced away does not pin the lease (docs/team.md, "Claims")."""

from __future__ import annotations

import json
import subprocess
from datetime import timedelta
from pathlib import Path

from heinzel.team.receipts import team_id

from .test_two_machines import CONTRACT, START, Machine, finished_slots, receipts, ts

SLOT = ts(START + timedelta(hours=9)).replace("Z", ".000Z")


def _two_contracts(tmp_path: Path) -> tuple[Path, Machine, Machine]:
    """A bare repository, Ana (owner, one wake a tick) and Ben (delegate), each with two
    daily team contracts approved."""
    remote = tmp_path / "team.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    ana, ben = Machine(tmp_path, "ana", remote), Machine(tmp_path, "ben", remote)
    with ana.config.open("a", encoding="utf-8") as config:
        config.write("[heinzel]\nmax_wakes_per_tick = 1\n")
    for name in ("daily-digest", "daily-review"):
        path = tmp_path / f"{name}.prose.md"
        path.write_text(CONTRACT.replace("daily-digest", name), encoding="utf-8")
        for machine in (ana, ben):
            machine.hz(START, "heinzel", "new", "--from", str(path))
            machine.hz(START, "approve", name)
    return remote, ana, ben


def _leases(remote: Path) -> list[dict[str, object]]:
    refs = subprocess.run(
        ["git", "-C", str(remote), "for-each-ref", "--format=%(contents:subject)", "refs/hz/"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    return [json.loads(line) for line in refs]


def test_a_wake_deferred_by_the_wake_limit_is_not_claimed(tmp_path: Path) -> None:
    """Ana's daemon runs one wake a tick: of two team slots due, the one it defers is not
    claimed, so when Ana stops, Ben takes that lease once it expires and runs the slot
    that day, not a day later (`orphan_grace`)."""
    remote, ana, ben = _two_contracts(tmp_path)
    now = START + timedelta(hours=12)
    ana.hz(now, "system", "daemon", "tick")
    assert ana.started() == [SLOT]
    # the slot that ran stays claimed until the next renewal sees its receipt
    assert sorted(len(lease["open"]) for lease in _leases(remote)) == [0, 1]
    later = now + timedelta(hours=7)  # Ana's leases (two 3h intervals) expired
    report = json.loads(ben.hz(later, "system", "daemon", "tick", "--json").stdout)
    assert ben.started() == [SLOT]
    assert [w["id"] for w in report["woken"]] != []
    assert finished_slots(remote) == [SLOT, SLOT]


def _set_lease(remote: Path, team: str, lease: dict[str, object]) -> None:
    """Write ``refs/hz/lease/<team>`` on the remote by hand, as a killed holder left it."""
    tree = subprocess.run(
        ["git", "-C", str(remote), "hash-object", "-t", "tree", "-w", "--stdin"],
        input="",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    message = json.dumps(lease, sort_keys=True, separators=(",", ":"))
    commit = subprocess.run(
        ["git", "-C", str(remote), "commit-tree", tree, "-m", message],
        capture_output=True,
        text=True,
        check=True,
        env={
            "GIT_AUTHOR_NAME": "x",
            "GIT_AUTHOR_EMAIL": "",
            "GIT_COMMITTER_NAME": "x",
            "GIT_COMMITTER_EMAIL": "",
            "PATH": "/usr/bin:/bin",
        },
    ).stdout.strip()
    subprocess.run(
        ["git", "-C", str(remote), "update-ref", f"refs/hz/lease/{team}", commit], check=True
    )


def test_a_claim_whose_slot_coalesced_into_a_later_one_is_settled(tmp_path: Path) -> None:
    """Ana's daemon claimed Monday's slot and died before the turn started, then slept:
    on Tuesday the slot is superseded by Tuesday's, so Ben takes the lease and runs
    Tuesday's slot at once instead of waiting out `orphan_grace`; `hz team status` on
    Monday evening shows the open claim blocking the lease, its cause and next step."""
    remote, _, ben = _two_contracts(tmp_path)
    team = team_id("daily-digest")
    monday = START + timedelta(hours=12)
    expiry = ts(monday + timedelta(hours=6)).replace("Z", ".000Z")
    _set_lease(
        remote,
        team,
        {
            "holder": "ana",
            "expiry": expiry,
            "token": 1,
            "owner_seen": None,
            "open": [f"{team}@{SLOT}"],
        },
    )
    evening = monday + timedelta(hours=8)
    report = json.loads(ben.hz(evening, "system", "daemon", "tick", "--json").stdout)
    assert any("daily-digest: lease blocked" in n for n in report["notices"])
    status = json.loads(ben.hz(evening, "team", "status", "--json").stdout)
    [blocked] = [lease for lease in status["leases"] if lease["team"] == team]
    assert blocked["state"] == "blocked" and blocked["open"] == [f"{team}@{SLOT}"]
    assert "orphan_grace" in blocked["next"]
    assert "blocked" in ben.hz(evening, "team", "status").stdout
    rows = json.loads(ben.hz(evening, "heinzel", "list", "--namespace", "team", "--json").stdout)
    [row] = [r for r in rows if r["name"] == "daily-digest"]
    assert row["team"]["state"] == "blocked" and row["team"]["open"] == [f"{team}@{SLOT}"]
    assert "ana #1 (blocked, 1 open)" in ben.hz(evening, "heinzel", "list").stdout
    tuesday = monday + timedelta(days=1)
    ben.hz(tuesday, "system", "daemon", "tick")
    tuesday_slot = ts(START + timedelta(days=1, hours=9)).replace("Z", ".000Z")
    finished = {str(r["key"]) for r in receipts(remote) if r["kind"] == "turn.finished"}
    assert f"{team}@{tuesday_slot}" in finished
    [lease] = [lease for lease in _leases(remote) if lease["open"] == [f"{team}@{tuesday_slot}"]]
    assert lease["holder"] == "ben"
