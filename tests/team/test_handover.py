"""Hand-overs judged by the lease each receipt was written under (docs/team.md, "Who runs
it: leases"), through the `hz` executable against a bare team repository."""

from __future__ import annotations

import json
import subprocess
from datetime import timedelta
from pathlib import Path

from .test_two_machines import START, Machine, Two, finished_slots, receipts, ts


def _interval(*machines: Machine, every: str = "1h") -> None:
    for machine in machines:
        text = machine.config.read_text(encoding="utf-8")
        machine.config.write_text(text.replace('"3h"', f'"{every}"'), encoding="utf-8")


def test_a_delegate_who_approved_days_earlier_does_not_run_the_owners_slot_again(
    tmp_path: Path,
    two: Two,
) -> None:
    """N1: Ana (owner) and Ben (delegate) approved on Monday. On Thursday Ana's daemon
    runs the 09:00 slot and her laptop sleeps; Ben's daemon ticks for the first time at
    11:45, takes the lease (token 2) and pushes his old approval receipt. Ana's receipt
    was written under her own lease (token 1), so it still counts: Ben does not run the
    09:00 slot at 12:45, or ever."""
    remote, ana, ben = two
    _interval(ana, ben)
    thursday = START + timedelta(days=3)
    slot = ts(thursday + timedelta(hours=9)).replace("Z", ".000Z")
    ana.hz(thursday + timedelta(hours=9, minutes=1), "system", "daemon", "tick")
    assert ana.started() == [slot]
    assert finished_slots(remote) == [slot]
    ben.hz(thursday + timedelta(hours=11, minutes=45), "system", "daemon", "tick")
    lease = json.loads(
        ben.hz(thursday + timedelta(hours=11, minutes=46), "team", "status", "--json").stdout
    )["leases"][0]
    assert (lease["holder"], lease["token"]) == ("ben", 2)
    for minutes in (12 * 60 + 45, 13 * 60 + 45, 20 * 60):
        ben.hz(thursday + timedelta(minutes=minutes), "system", "daemon", "tick")
    assert ben.started() == []
    assert finished_slots(remote) == [slot]
    # Ben's approval was collected late: it carries the token Ben held at its time, none
    mine = [r for r in receipts(remote) if r["by"] == "ben" and r["kind"] != "turn.finished"]
    assert mine and all(r["token"] == 0 for r in mine if str(r["at"]) < ts(thursday))
    now = thursday + timedelta(hours=20, minutes=1)
    lint = json.loads(ben.hz(now, "team", "lint", "--json").stdout)
    assert lint == {"ok": True, "problems": []}
    status = json.loads(ben.hz(now, "team", "status", "--json").stdout)
    assert status["quarantined"] == []


def _force_push(remote: Path, keep: str) -> None:
    """Rewrite the remote's hz/state to ``keep``'s commit, as a member's force-push would."""
    subprocess.run(
        ["git", "-C", str(remote), "update-ref", "refs/heads/hz/state", keep], check=True
    )


def _tip(remote: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(remote), "rev-parse", "refs/heads/hz/state"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def test_a_rewrite_found_by_lint_is_announced_once_and_the_lost_receipts_count_again(
    tmp_path: Path,
    two: Two,
) -> None:
    """N2, N3: Ana runs Monday's slot; a force-push drops her receipts; Ben (Ana away)
    runs Tuesday's under token 2. Ana's `hz team lint` on Wednesday finds the rewrite:
    it says so once (her next tick and lint do not repeat it), her next tick pushes the
    dropped receipts again, and they count as what they were: Monday ran once, under
    token 1, nothing is quarantined and nobody runs Monday again."""
    remote, ana, ben = two
    monday = START + timedelta(hours=12)
    ana.hz(monday - timedelta(hours=11), "system", "daemon", "tick")  # approvals leave
    first = _tip(remote)
    ana.hz(monday, "system", "daemon", "tick")
    slot = ts(START + timedelta(hours=9)).replace("Z", ".000Z")
    assert finished_slots(remote) == [slot]
    _force_push(remote, first)
    assert finished_slots(remote) == []
    tuesday = START + timedelta(days=1, hours=12)
    ben.hz(tuesday, "system", "daemon", "tick")
    assert ben.started() == [ts(tuesday - timedelta(hours=3)).replace("Z", ".000Z")]
    wednesday = START + timedelta(days=2, hours=6)
    linted = json.loads(ana.hz(wednesday, "team", "lint", "--json").stdout)
    [notice] = linted["notices"]
    assert "hz/state was rewritten" in notice and "pushed again" in notice
    status = ana.hz(wednesday, "team", "status").stdout
    assert "hz/state was rewritten" in status
    ticked = json.loads(ana.hz(wednesday, "system", "daemon", "tick", "--json").stdout)
    assert not any("rewritten" in n for n in ticked["notices"])
    assert "notices" not in json.loads(ana.hz(wednesday, "team", "lint", "--json").stdout)
    assert finished_slots(remote)[:2] == [
        slot,
        ts(tuesday - timedelta(hours=3)).replace("Z", ".000Z"),
    ]
    mondays = [
        r for r in receipts(remote) if r["kind"] == "turn.finished" and r["key"].endswith(slot)
    ]
    assert [r["token"] for r in mondays] == [1]
    for machine in (ana, ben):
        machine.hz(wednesday + timedelta(hours=6), "system", "daemon", "tick")
        state = json.loads(machine.hz(wednesday, "team", "status", "--json").stdout)
        assert state["quarantined"] == []
    assert ana.started().count(slot) == 1 and slot not in ben.started()
