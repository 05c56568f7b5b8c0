"""Team Heinzelmännchen at scale: five daemons ("machines", each a home and a handle)
against one bare team repository, a hundred daily team Heinzelmännchen owned round-robin
and delegated to the other four, ticking together every six simulated hours with one
member away each day, for a simulated week (``HZ_BENCH_TEAM_DAYS=30`` for a month,
``HZ_BENCH_TEAM_N`` for another count, ``HZ_BENCH_TEAM_WAKES`` for the per-tick limit).

Each round runs the present daemons' ``hz system daemon tick --json`` as concurrent
processes at the same ``HZ_NOW``, so their pushes race as real daemons' would. Printed:
the slots run (each must run exactly once across all homes), pushes and conflicts per
tick, lease takeovers, the size of ``hz/state``, and a round's time with a hundred slots
due beside a round with nothing due (the baseline, measured in the same run)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from click.testing import CliRunner

from heinzel.cli import group

MEMBERS = ("ana", "ben", "cai", "dee", "eli")
START = datetime(2026, 10, 26, 0, 0, tzinfo=UTC)  # a Monday
STEP = timedelta(hours=6)
WAKES_PER_TICK = int(os.environ.get("HZ_BENCH_TEAM_WAKES", "100"))
"""A real daemon ticks every few minutes, ten wakes a tick; ticking every six simulated
hours, the per-tick limit is raised so a daemon's throughput per hour stays that order
(``HZ_BENCH_TEAM_WAKES=10`` shows what the default does at this tick rate: slots a daemon
deferred and could not run before its member went away coalesce into the next slot)."""
CONTRACT = """---
name: {name}
kind: responsibility
hz:
  namespace: team
  schedule: "0 9 * * *"
  timezone: UTC
  owner: {owner}
  delegates: [{delegates}]
  agent: {{max_usd: 0.01}}
---

### Goal

Keep {name} true.

### Done when

- [ ] it is true
"""


def _ts(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class Machine:
    """One member's home and configuration."""

    def __init__(self, root: Path, handle: str, remote: Path) -> None:
        self.handle = handle
        self.root = root / handle
        self.root.mkdir()
        self.config = self.root / "config.toml"
        self.config.write_text(
            f"[heinzel]\nmax_wakes_per_tick = {WAKES_PER_TICK}\n\n"
            f'[team]\nrepository = "{remote}"\nhandle = "{handle}"\ninterval = "6h"\n',
            encoding="utf-8",
        )

    def env(self, now: datetime) -> dict[str, str]:
        clean = {k: v for k, v in os.environ.items() if not k.startswith("HZ_")}
        return {
            **clean,
            "HZ_HOME": str(self.root / "home"),
            "HZ_CONFIG": str(self.config),
            "HZ_NOW": _ts(now),
            "HZ_MODEL": "offline",
            "HZ_LOG_LEVEL": "error",
            "XDG_CONFIG_HOME": str(self.root / "cfg"),
        }

    def tick(self, now: datetime) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "heinzel", "system", "daemon", "tick", "--json"],
            env=self.env(now),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )


def _setup(tmp: Path, count: int) -> tuple[Path, list[Machine]]:
    remote = tmp / "team.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    subprocess.run(
        ["git", "-C", str(remote), "symbolic-ref", "HEAD", "refs/heads/main"], check=True
    )
    subprocess.run(
        ["git", "-C", str(remote), "config", "core.logAllRefUpdates", "always"], check=True
    )
    contracts = tmp / "contracts"
    contracts.mkdir()
    names = []
    for number in range(count):
        name = f"digest-{number:03d}"
        owner = MEMBERS[number % len(MEMBERS)]
        delegates = ", ".join(m for m in MEMBERS if m != owner)
        text = CONTRACT.format(name=name, owner=owner, delegates=delegates)
        (contracts / f"{name}.prose.md").write_text(text, encoding="utf-8")
        names.append(name)
    machines = [Machine(tmp, handle, remote) for handle in MEMBERS]
    hz, runner = group(), CliRunner()
    for machine in machines:  # in process: a thousand short commands, not a thousand starts
        env = machine.env(START)
        for name in names:
            for args in (
                ["heinzel", "new", "--from", str(contracts / f"{name}.prose.md")],
                ["approve", name],
            ):
                done = runner.invoke(hz, args, env=env, catch_exceptions=False)
                assert done.exit_code == 0, (args, done.output)
    return remote, machines


def _round(machines: list[Machine], now: datetime) -> tuple[float, list[dict[str, object]]]:
    began = time.perf_counter()
    running = [machine.tick(now) for machine in machines]
    reports = []
    for process in running:
        out, _ = process.communicate(timeout=600)
        reports.append(json.loads(out) if out.strip() else {})
    return time.perf_counter() - began, reports


def _state(remote: Path) -> tuple[Counter[str], int, int, int]:
    """Finished receipts per slot, and ``hz/state``'s files, bytes and commits."""
    git = ["git", "-C", str(remote)]
    listed = subprocess.run(
        [*git, "ls-tree", "-r", "-l", "hz/state"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    slots: Counter[str] = Counter()
    size = 0
    for entry in listed:
        head, _, path = entry.partition("\t")
        size += int(head.split()[3])
        text = subprocess.run(
            [*git, "show", f"hz/state:{path}"], capture_output=True, text=True, check=True
        ).stdout
        for line in text.splitlines():
            record = json.loads(line)
            if record.get("kind") == "turn.finished" and record.get("cause") == "schedule":
                slots[str(record["key"])] += 1
    commits = int(
        subprocess.run(
            [*git, "rev-list", "--count", "hz/state"], capture_output=True, text=True, check=True
        ).stdout
    )
    return slots, len(listed), size, commits


def main() -> None:
    days = int(os.environ.get("HZ_BENCH_TEAM_DAYS", "7"))
    count = int(os.environ.get("HZ_BENCH_TEAM_N", "100"))
    with tempfile.TemporaryDirectory() as tmp:
        began = time.perf_counter()
        remote, machines = _setup(Path(tmp), count)
        setup_s = time.perf_counter() - began
        due: list[float] = []
        idle: list[float] = []
        totals: Counter[str] = Counter()
        takeovers = 0
        for round_ in range(days * 4):
            now = START + round_ * STEP
            away = MEMBERS[(now - START).days % len(MEMBERS)]
            present = [m for m in machines if m.handle != away]
            seconds, reports = _round(present, now)
            (due if now.hour == 12 else idle).append(seconds)  # 09:00's slots run at 12:00
            for report in reports:
                team = report.get("team") or {}
                assert isinstance(team, dict)
                for name in ("pushes", "conflicts", "lease_pushes", "lease_conflicts", "refused"):
                    totals[name] += int(team.get(name) or 0)
                totals["ticks"] += 1
                totals["errors"] += len(report.get("errors") or [])  # type: ignore[arg-type]
                leases = team.get("leases") or []
                takeovers += sum(1 for change in leases if change.get("action") == "take")
        slots, files, size, commits = _state(remote)
    runs = Counter(slots.values())
    ticks = totals["ticks"]
    print(
        f"{len(machines)} daemons, {count} team Heinzelmännchen, {days} days, "
        f"{ticks} ticks (setup {setup_s:.0f} s in process)"
    )
    print(
        f"slots run: {len(slots)} of {days * count} due; run once {runs[1]}, "
        f"more than once {sum(n for k, n in runs.items() if k > 1)}"
    )
    print(
        f"per tick: {totals['pushes'] / ticks:.2f} receipt pushes, "
        f"{totals['lease_pushes'] / ticks:.2f} lease pushes; in all {totals['conflicts']} "
        f"receipt push retries, {totals['lease_conflicts']} lease refs lost a race, "
        f"{totals['refused']} receipts refused, {takeovers} leases taken, "
        f"{totals['errors']} tick errors"
    )
    print(
        f"hz/state: {files} files, {size / 1024:.1f} KiB, {commits} commits "
        f"({size / max(1, len(slots)):.0f} B per slot)"
    )
    print(
        f"a round of {len(machines) - 1} daemons: {statistics.median(due):.2f} s with the "
        f"day's slots due, {statistics.median(idle):.2f} s with nothing due "
        f"(x{statistics.median(due) / statistics.median(idle):.1f})"
    )
