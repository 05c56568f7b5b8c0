"""One person, two machines: the same handle in two homes are two lease holders, so
exactly one of them runs each slot (docs/team.md, "Who runs it: leases")."""

from __future__ import annotations

import json
import stat
import subprocess
from datetime import timedelta
from pathlib import Path

from .test_two_machines import CONTRACT, START, STEP, Machine, finished_slots, receipts, ts


def test_two_homes_under_one_handle_run_each_slot_once(tmp_path: Path) -> None:
    """Ana's laptop runs Monday's slot and dies before its receipt leaves; her desktop,
    same handle, ticking an hour later does not run Monday again (the lease names the
    laptop's machine id, not only "ana"). Over three days of both ticking, each slot
    runs exactly once, the receipts name the machine that ran them, and each home's
    machine id is private."""
    remote = tmp_path / "team.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    (tmp_path / "daily-digest.prose.md").write_text(CONTRACT, encoding="utf-8")
    laptop = Machine(tmp_path, "ana", remote, name="laptop")
    desktop = Machine(tmp_path, "ana", remote, name="desktop")
    for machine in (laptop, desktop):
        machine.hz(START, "heinzel", "new", "--from", str(tmp_path / "daily-digest.prose.md"))
        machine.hz(START, "approve", "daily-digest")
    monday = START + timedelta(hours=12)
    crashed = laptop.hz(
        monday, "system", "daemon", "tick", check=False, HZ_CRASH_AT="after:turn.skipped"
    )
    assert crashed.returncode == 137
    desktop.hz(monday + timedelta(hours=1), "system", "daemon", "tick")
    assert desktop.started() == []
    now = monday
    while now < START + timedelta(days=3):
        now += STEP
        desktop.hz(now, "system", "daemon", "tick")
        laptop.hz(now, "system", "daemon", "tick")
    slots = [ts(START + timedelta(days=d, hours=9)).replace("Z", ".000Z") for d in range(3)]
    assert sorted(laptop.started() + desktop.started()) == slots
    assert finished_slots(remote) == slots
    ids = {}
    for machine in (laptop, desktop):
        path = machine.root / "home" / "team" / "machine"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        ids[machine.root.name] = path.read_text(encoding="utf-8").strip()
    assert ids["laptop"] != ids["desktop"]
    ran = {
        str(r["key"]).split("@", 1)[1]: r for r in receipts(remote) if r["kind"] == "turn.finished"
    }
    assert ran[slots[0]]["by"] == "ana" and ran[slots[0]]["machine"] == ids["laptop"]
    lint = desktop.hz(now, "team", "lint", "--json")
    assert json.loads(lint.stdout) == {"ok": True, "problems": []}
