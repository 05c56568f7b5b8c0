"""The smaller team faults of issue 39, each through `hz` against a bare team
repository (docs/team.md)."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from .test_claims import _leases
from .test_hostile_state import MONDAY, TEAM, TUESDAY, WEDNESDAY, _append, _forged, _git
from .test_two_machines import CONTRACT, START, Two, finished_slots, receipts, ts


def test_a_deleted_lease_ref_does_not_lift_a_forged_token_999(tmp_path: Path, two: Two) -> None:
    """A forged token-999 receipt is quarantined; then the lease ref is deleted. Ana's
    next take is token 2, not 1000, the forged line stays quarantined and her slot runs."""
    remote, ana, _ben = two
    ana.hz(START + timedelta(hours=12), "system", "daemon", "tick")
    _append(
        remote,
        f"{TEAM}/{TUESDAY[:10]}.jsonl",
        [_forged("ben", 999, f"{TEAM}@{TUESDAY}", TUESDAY, 9)],
    )
    _git(remote, "update-ref", "-d", f"refs/hz/lease/{TEAM}")
    later = START + timedelta(days=1, hours=12)
    ana.hz(later, "system", "daemon", "tick")
    assert [lease["token"] for lease in _leases(remote)] == [2]
    assert TUESDAY in ana.started()
    status = json.loads(ana.hz(later, "team", "status", "--json").stdout)
    assert [q["by"] for q in status["quarantined"]] == ["ben"]
    assert "token 999" in status["quarantined"][0]["problem"]


def test_a_receipt_dated_2099_inside_a_2026_day_file_is_refused_by_the_lint(
    tmp_path: Path,
    two: Two,
) -> None:
    """A line whose `at` is not on its file's day is quarantined and named by `hz team
    lint`; it does not settle the slot it names."""
    remote, ana, _ben = two
    ana.hz(START + timedelta(hours=12), "system", "daemon", "tick")
    future = "2099-10-27T09:30:00.000Z"
    _append(
        remote, f"{TEAM}/{TUESDAY[:10]}.jsonl", [_forged("ana", 1, f"{TEAM}@{TUESDAY}", future, 8)]
    )
    later = START + timedelta(days=1, hours=12)
    lint = ana.hz(later, "team", "lint", "--json", check=False)
    assert lint.returncode == 1
    [problem] = json.loads(lint.stdout)["problems"]
    assert "2099" in problem and "not on this file's day" in problem
    ana.hz(later, "system", "daemon", "tick")
    assert TUESDAY in ana.started()


def test_every_members_approval_leaves_without_the_lease(tmp_path: Path, two: Two) -> None:
    """Ben approves while Ana holds the lease: his `contract.amended` receipt leaves at
    his next tick, carrying no token (he held none then), and counts."""
    remote, ana, ben = two
    ana.hz(START + timedelta(hours=1), "system", "daemon", "tick")
    ben.hz(START + timedelta(hours=2), "system", "daemon", "tick")
    amended = [r for r in receipts(remote) if r["kind"] == "contract.amended"]
    assert sorted(str(r["by"]) for r in amended) == ["ana", "ben"]
    assert [r["token"] for r in amended if r["by"] == "ben"] == [0]
    lint = ben.hz(START + timedelta(hours=2), "team", "lint", "--json")
    assert json.loads(lint.stdout)["ok"]


def test_a_delegates_turn_killed_after_it_started_ends_once_the_lease_moved_on(
    tmp_path: Path,
    two: Two,
) -> None:
    """Ben's daemon is killed right after Tuesday's turn.started; Ana returns on Wednesday
    and takes the lease back. Ben's next tick ends his open turn (superseded) instead of
    leaving it open for ever, and reports no error."""
    remote, ana, ben = two
    ana.hz(START + timedelta(hours=12), "system", "daemon", "tick")
    tuesday = START + timedelta(days=1, hours=12)
    killed = ben.hz(
        tuesday, "system", "daemon", "tick", check=False, HZ_CRASH_AT="after:turn.started"
    )
    assert killed.returncode == 137 and ben.started() == [TUESDAY]
    wednesday = START + timedelta(days=2, hours=12)
    ana.hz(wednesday, "system", "daemon", "tick")
    assert WEDNESDAY in ana.started()
    report = json.loads(
        ben.hz(wednesday + timedelta(hours=1), "system", "daemon", "tick", "--json").stdout
    )
    assert report["errors"] == []
    assert any(s.get("reason") == "superseded" for s in report["skipped"])
    spines = list((ben.root / "home" / "heinzel").glob("*/session.jsonl"))
    ends = [
        event["data"]
        for s in spines
        for event in map(json.loads, s.read_text(encoding="utf-8").splitlines())
        if event["kind"] == "turn.finished"
    ]
    assert [(e["disposition"], e["reason"]) for e in ends] == [("abandoned", "superseded")]
    assert MONDAY in finished_slots(remote) and ts(START)[:4] == "2026"


def test_a_team_contract_without_outputs_on_the_offline_model_ends_cleanly(
    tmp_path: Path,
    two: Two,
) -> None:
    """A team contract that reads an input but names no output: on the offline model
    its slot's turn ends skipped with a reason (nothing to draft into), not failed with
    KeyError 'draft', and its receipt says so."""
    remote, ana, _ben = two
    notes = tmp_path / "notes.md"
    notes.write_text("- one\n- two\n", encoding="utf-8")
    contract = tmp_path / "notes-digest.prose.md"
    contract.write_text(
        CONTRACT.replace("name: daily-digest", "name: notes-digest").replace(
            "  agent: {max_usd: 0.01}\n",
            "  agent: {max_usd: 0.01}\n  requires: [files:read]\n  inputs:\n"
            f"    notes: {{from: files.read, args: {{path: {notes}}}}}\n",
        ),
        encoding="utf-8",
    )
    ana.hz(START, "heinzel", "new", "--from", str(contract))
    ana.hz(START, "approve", "notes-digest")
    ticked = ana.hz(START + timedelta(hours=12), "system", "daemon", "tick")
    assert "KeyError" not in ticked.stdout + ticked.stderr
    finished = [r for r in receipts(remote) if r["kind"] == "turn.finished" and r["team"] != TEAM]
    assert [r["disposition"] for r in finished] == ["skipped"]
