"""Refusals reach the person: a push the server's hook refuses, and a remote out of
reach, are said in the tick's line, a notice and `hz team status` (docs/team.md),
through the `hz` executable against a bare team repository."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from .test_two_machines import CONTRACT, START, Machine, Two


def test_a_hook_with_an_old_roster_refusing_a_new_delegate_is_said_and_how_to_fix_it(
    tmp_path: Path,
    two: Two,
) -> None:
    """N4: the hook was written before Cara joined as a delegate. When Ana's lease
    expires, Cara's daemon takes it; the server refuses the take: Cara's tick says so
    with the hook's reason (HZH480), not as a lost race, in its notices, and `hz team
    status` names the missing member and the fix instead of "takes it at its next tick"."""
    remote, ana, _ben = two
    ana.hz(START, "team", "hook", str(remote))
    cara = Machine(tmp_path, "cara", remote)
    with cara.config.open("a", encoding="utf-8") as config:
        config.write('delegates = ["cara"]\n')
    contract = tmp_path / "daily-digest.prose.md"
    contract.write_text(CONTRACT, encoding="utf-8")
    cara.hz(START, "heinzel", "new", "--from", str(contract))
    cara.hz(START, "approve", "daily-digest")
    ana.hz(START + timedelta(hours=12), "system", "daemon", "tick")
    tuesday = START + timedelta(days=1, hours=12)
    ticked = cara.hz(tuesday, "system", "daemon", "tick", check=False)
    assert "HZH480" in ticked.stdout + ticked.stderr
    assert "holder 'cara' is not a roster handle" in ticked.stdout
    report = json.loads(cara.hz(tuesday, "system", "daemon", "tick", "--json", check=False).stdout)
    assert report["team"]["lease_conflicts"] == 0
    assert any("lacks cara" in n for n in report["notices"])
    assert cara.started() == []
    shown = cara.hz(tuesday, "team", "status").stdout
    assert "hook refused" in shown and "lacks cara" in shown and "hz team hook" in shown
    status = json.loads(cara.hz(tuesday, "team", "status", "--json").stdout)
    [lease] = status["leases"]
    assert "lacks cara" in lease["next"] and "next tick" not in lease["next"]


def test_status_says_since_when_the_remote_is_unreachable_and_what_runs_meanwhile(
    tmp_path: Path,
    two: Two,
) -> None:
    """The remote moves away after Ana's Monday tick: her ticks on Tuesday fail to
    reach it, and `hz team status` says since when (the first failed tick, not the
    last), why, and what runs meanwhile; once it is back, status says it was reached."""
    remote, ana, _ben = two
    ana.hz(START + timedelta(hours=12), "system", "daemon", "tick")
    away = remote.with_name("moved.git")
    remote.rename(away)
    first = START + timedelta(days=1, hours=1)
    for hours in (1, 4):
        ana.hz(START + timedelta(days=1, hours=hours), "system", "daemon", "tick", check=False)
    status = json.loads(ana.hz(first, "team", "status", "--json").stdout)["remote"]
    assert status["unreachable_since"] == "2026-10-27T01:00:00.000Z"
    assert status["reached"] == "2026-10-26T12:00:00.000Z"
    assert "outbox" in status["meanwhile"] and "delegate" in status["meanwhile"]
    shown = ana.hz(first, "team", "status").stdout
    assert "unreachable since 2026-10-27T01:00:00.000Z" in shown and "meanwhile:" in shown
    away.rename(remote)
    back = START + timedelta(days=1, hours=7)
    ana.hz(back, "system", "daemon", "tick")
    status = json.loads(ana.hz(back, "team", "status", "--json").stdout)["remote"]
    assert status["unreachable_since"] is None and status["reached"] == "2026-10-27T07:00:00.000Z"
