"""Two homes ("machines") against one bare team repository, through the `hz` executable."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests import forkhz

CONTRACT = """---
name: daily-digest
kind: responsibility
hz:
  namespace: team
  schedule: "0 9 * * *"
  timezone: UTC
  owner: ana
  delegates: [ben]
  agent: {max_usd: 0.01}
---

### Goal

Keep the digest true.

### Done when

- [ ] it is true
"""
START = datetime(2026, 10, 26, 0, 0, tzinfo=UTC)  # a Monday
STEP = timedelta(hours=6)


def ts(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class Machine:
    """One user's home and config, run as `hz` subprocesses at a given HZ_NOW."""

    def __init__(
        self, root: Path, handle: str, remote: Path, name: str | None = None, made: bool = False
    ) -> None:
        """A new machine in ``root`` (its folder and config written), or the one ``made``
        there before (`two` in tests/team/conftest.py)."""
        self.root = root / (name or handle)
        self.config = self.root / "config.toml"
        if made:
            return
        self.root.mkdir()
        self.config.write_text(
            f'[team]\nrepository = "{remote}"\nhandle = "{handle}"\ninterval = "3h"\n',
            encoding="utf-8",
        )

    def env(self, now: datetime, **extra: str) -> dict[str, str]:
        clean = {k: v for k, v in os.environ.items() if not k.startswith("HZ_")}
        return {
            **extra,
            **clean,
            "HZ_HOME": str(self.root / "home"),
            "HZ_CONFIG": str(self.config),
            "HZ_NOW": ts(now),
            "HZ_MODEL": "offline",
            "XDG_CONFIG_HOME": str(self.root / "cfg"),
        }

    def hz(
        self, now: datetime, *args: str, check: bool = True, **extra: str
    ) -> subprocess.CompletedProcess[str]:
        return forkhz.run(
            [sys.executable, "-m", "heinzel", *args],
            env=self.env(now, **extra),
            capture_output=True,
            text=True,
            check=check,
        )

    def killed_tick(self, now: datetime, delay: float) -> None:
        """A tick SIGKILLed ``delay`` seconds in (or finished before). Exec'd, not forked
        (tests/forkhz.py): the delays were drawn for a process that imports hz first."""
        with subprocess.Popen(
            [sys.executable, "-m", "heinzel", "system", "daemon", "tick"],
            env=self.env(now),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        ) as process:
            try:
                process.wait(timeout=delay)
            except subprocess.TimeoutExpired:
                process.send_signal(signal.SIGKILL)
                process.wait()

    def started(self) -> list[str]:
        """The slot keys' slots of every team turn.started in this home's spines."""
        slots = []
        for spine in (self.root / "home" / "heinzel").glob("*/session.jsonl"):
            for line in spine.read_text(encoding="utf-8").splitlines():
                event = json.loads(line)
                if event["kind"] == "turn.started" and event["data"]["cause"] == "schedule":
                    assert isinstance(event["data"].get("fencing"), int)
                    slots.append(event["key"].split("@", 1)[1])
        return slots


Two = tuple[Path, Machine, Machine]
"""The bare team repository, Ana's machine and Ben's (`team_of_two`, fixture `two`)."""


def team_of_two(tmp_path: Path) -> Two:
    """A bare team repository whose HEAD is main, and Ana (owner) and Ben (delegate)
    with the daily-digest team contract approved at START. The tests take it made
    (fixture `two` in tests/team/conftest.py: made once per worker, put back before each)."""
    remote = tmp_path / "team.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    subprocess.run(
        ["git", "-C", str(remote), "symbolic-ref", "HEAD", "refs/heads/main"], check=True
    )
    (tmp_path / "daily-digest.prose.md").write_text(CONTRACT, encoding="utf-8")
    ana, ben = Machine(tmp_path, "ana", remote), Machine(tmp_path, "ben", remote)
    for machine in (ana, ben):
        machine.hz(START, "heinzel", "new", "--from", str(tmp_path / "daily-digest.prose.md"))
        machine.hz(START, "approve", "daily-digest")
    return remote, ana, ben


def receipts(remote: Path) -> list[dict[str, object]]:
    """Every receipt on the remote's hz/state."""
    files = subprocess.run(
        ["git", "-C", str(remote), "ls-tree", "-r", "--name-only", "refs/heads/hz/state"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    found: list[dict[str, object]] = []
    for path in files:
        if not path.endswith(".jsonl"):
            continue  # roster.toml
        text = subprocess.run(
            ["git", "-C", str(remote), "show", f"refs/heads/hz/state:{path}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        found += map(json.loads, text.splitlines())
    return found


def finished_slots(remote: Path) -> list[str]:
    """The slots of every turn.finished receipt on the remote's hz/state."""
    return sorted(
        str(r["key"]).split("@", 1)[1] for r in receipts(remote) if r["kind"] == "turn.finished"
    )


@pytest.mark.kill
def test_a_turn_killed_before_its_receipt_left_is_not_run_again_by_the_delegate(
    tmp_path: Path,
    two: Two,
) -> None:
    """Ana's daemon dies right after Monday's final turn event is durable (its receipt not
    yet pushed) and then sleeps until Tuesday morning: Ben's daemon does not run Monday
    again (Ana's claim on the lease is unsettled), Ana's return pushes the receipt under her token,
    and each of three days' slots runs once."""
    remote, ana, ben = two
    now = START + timedelta(hours=12)  # Monday noon, the 09:00 slot is due
    # The offline model's turn ends in turn.skipped, its final event (receipt: turn.finished).
    crashed = ana.hz(now, "system", "daemon", "tick", check=False, HZ_CRASH_AT="after:turn.skipped")
    assert crashed.returncode == 137
    assert ana.started() == [ts(START + timedelta(hours=9)).replace("Z", ".000Z")]
    # Ana's laptop wakes on Tuesday 06:00, before Tuesday's slot settles Monday's claim
    back = START + timedelta(days=1, hours=6)
    while now < START + timedelta(days=3):
        now += STEP
        ben.hz(now, "system", "daemon", "tick")
        if now >= back:
            ana.hz(now, "system", "daemon", "tick")
    slots = [ts(START + timedelta(days=d, hours=9)).replace("Z", ".000Z") for d in range(3)]
    assert ben.started() == []
    assert sorted(ana.started()) == slots
    assert finished_slots(remote) == slots
    lint = ben.hz(now, "team", "lint", "--json")
    assert json.loads(lint.stdout) == {"ok": True, "problems": []}
    [row] = json.loads(ben.hz(now, "heinzel", "list", "--namespace", "team", "--json").stdout)
    assert row["team"]["holder"] == "ana"
    assert row["team"]["last_receipt"]["key"].endswith(slots[-1])
    assert "LAST RECEIPT" in ben.hz(now, "heinzel", "list", "--namespace", "team").stdout
    shown = json.loads(ben.hz(now, "heinzel", "show", "daily-digest", "--json").stdout)
    assert shown["team"]["holder"] == "ana"
    assert "lease:    ana #" in ben.hz(now, "heinzel", "show", "daily-digest").stdout


@pytest.mark.kill
def test_a_week_of_daily_slots_runs_each_once_under_kills_and_hands_over(
    tmp_path: Path,
    two: Two,
) -> None:
    """Ana (owner) and Ben (delegate) tick every six hours for a week with random
    SIGKILLs; Ana stops on Wednesday and Thursday: each slot runs exactly once (both
    spines and hz/state agree), Ben runs the days Ana is away and hands back, main is
    never written, and `hz team lint` passes on the whole branch."""
    remote, ana, ben = two
    away = (START + timedelta(days=2), START + timedelta(days=4))  # Wednesday, Thursday
    chance = random.Random(18)
    now = START + STEP
    while now < START + timedelta(days=7):
        order = [ana, ben] if chance.random() < 0.5 else [ben, ana]
        for machine in order:
            if machine is ana and away[0] <= now < away[1]:
                continue
            if chance.random() < 0.3:
                machine.killed_tick(now, chance.uniform(0.0, 1.5))
            machine.hz(now, "system", "daemon", "tick")  # the timer's next run
        now += STEP

    slots = [ts(START + timedelta(days=d, hours=9)).replace("Z", ".000Z") for d in range(7)]
    assert sorted(ana.started() + ben.started()) == slots
    assert sorted(ben.started()) == slots[2:4]
    receipts = subprocess.run(
        ["git", "-C", str(remote), "log", "--format=%H", "refs/heads/hz/state"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert receipts.stdout.strip()
    assert finished_slots(remote) == slots
    heads = subprocess.run(
        ["git", "-C", str(remote), "for-each-ref", "--format=%(refname)", "refs/heads/"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert heads == ["refs/heads/hz/state"]
    lint = ana.hz(now, "team", "lint", "--json")
    assert json.loads(lint.stdout) == {"ok": True, "problems": []}
    status = json.loads(ana.hz(now, "team", "status", "--json").stdout)
    assert status["outbox"] == 0 and [lease["holder"] for lease in status["leases"]] == ["ana"]
