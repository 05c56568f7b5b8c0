"""``make soak-team``: team Heinzelmännchen for a simulated month under failures.

Five homes (each a member's daemon) against one bare team repository, a hundred team
Heinzelmännchen on mixed schedules (daily, weekdays, twice a day) owned round-robin and
delegated to the other four, ticking together every six simulated hours through
``HZ_NOW``, with: seeded random SIGKILLs of ticks (the timer's next run follows at once),
one member away each day (a pause past its leases' expiry), one member's clock ahead by
20 s (within the default ``max_skew`` of 30 s), one hostile push halfway (a forged
``turn.finished`` with a token no lease granted, and a line by a handle off the roster),
the N1 hand-over (one delegate, ``dee``, approved at the start but its daemon first ticks
on day 3, after owners' leases ran out while they slept), and force-pushes of ``hz/state``
(at a third and two thirds of the run, the branch set back three commits), each followed
by ``hz team lint`` on another member's machine before any tick fetches it. Every member
signs its ``hz/state`` commits with its own ``ssh-keygen`` key; ana starts the roster on
``hz/state`` with the first five and installs ``hz team hook`` on the bare repository
(it reads the roster from there). A sixth member, ``fay`` (a delegate of every one),
joins a quarter into the run: ana adds her with ``hz team roster add``, a commit she
signs, and fay's daemon ticks from then on. The hostile push is a forger's with push
access and no key on the roster: pushed, the hook must refuse it; then written straight
into the repository (as a server without the hook would take it), adding an unsigned
``turn.finished`` for the coming slot as the lease's holder under its current token,
which only the signature tells from a real one; at the end every member's ``hz team
lint`` must name all three forged lines as quarantined.

Printed: slots due, slots run exactly once, doubles, slots coalesced into a later one (a
slot that fell inside the lease of a member who went away: the latest-slot rule runs only
the later one), slots lost (neither it nor a later one ran), pushes per hour,
``hz/state``'s bytes, ``hz team lint``'s time each week, and the worst time a slot waited
for its turn to start, and the notices the ticks and lints said (rewrites among them).
``HZ_SOAK_TEAM_DAYS`` (30), ``HZ_SOAK_TEAM_N`` (100),
``HZ_SOAK_TEAM_SEED`` (7), ``HZ_SOAK_TEAM_KILLS`` (a tick's kill chance, 0.15) change it.
Also printed: the roster change, whether the hook refused the forger's push, and the
forged lines each member quarantined. Exit 1 on a double, a lost slot, a forged push the
hook let through or a forged line a member did not quarantine.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from click.testing import CliRunner

from heinzel.cli import group
from heinzel.contract.schedule import next_slot
from heinzel.team.receipts import team_id

MEMBERS = ("ana", "ben", "cai", "dee", "eli")
OWNERS = MEMBERS[:5]  # fay is a delegate of every one, not an owner
JOINER = "fay"  # not on the roster until ana adds her a quarter into the run
SKEWED = "eli"
LATE = "dee"  # approved at the start; its daemon first ticks on day 3 (N1)
START = datetime(2026, 10, 26, 0, 0, tzinfo=UTC)  # a Monday
STEP = timedelta(hours=6)
SCHEDULES = ("0 9 * * *", "30 14 * * 1-5", "0 8,20 * * *")
CONTRACT = """---
name: {name}
kind: responsibility
hz:
  namespace: team
  schedule: "{schedule}"
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
    def __init__(self, root: Path, handle: str, remote: Path) -> None:
        self.handle = handle
        self.root = root / handle
        self.root.mkdir()
        self.config = self.root / "config.toml"
        key = self.root / "signing_key"
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", handle, "-f", str(key)],
            check=True,
        )
        self.public = key.parent / f"{key.name}.pub"
        self.config.write_text(
            "[heinzel]\nmax_wakes_per_tick = 100\n\n"
            f'[team]\nrepository = "{remote}"\nhandle = "{handle}"\ninterval = "6h"\n'
            f'signing_key = "{key}"\n',
            encoding="utf-8",
        )

    def env(self, now: datetime) -> dict[str, str]:
        clean = {k: v for k, v in os.environ.items() if not k.startswith("HZ_")}
        skew = timedelta(seconds=20) if self.handle == SKEWED else timedelta(0)
        return {
            **clean,
            "HZ_HOME": str(self.root / "home"),
            "HZ_CONFIG": str(self.config),
            "HZ_NOW": _ts(now + skew),
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

    def started(self) -> list[tuple[str, str, str]]:
        """``(local id, slot, started at)`` of every schedule turn.started in this home."""
        found = []
        for spine in (self.root / "home" / "heinzel").glob("*/session.jsonl"):
            for line in spine.read_text(encoding="utf-8").splitlines():
                event = json.loads(line)
                if event["kind"] == "turn.started" and event["data"].get("cause") == "schedule":
                    found.append((spine.parent.name, event["key"].split("@", 1)[1], event["ts"]))
        return found


def _setup(tmp: Path, count: int) -> tuple[Path, list[Machine], dict[str, str]]:
    remote = tmp / "team.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    contracts = tmp / "contracts"
    contracts.mkdir()
    schedules = {}
    for number in range(count):
        name = f"duty-{number:03d}"
        owner = OWNERS[number % len(OWNERS)]
        delegates = ", ".join(m for m in (*MEMBERS, JOINER) if m != owner)
        schedule = SCHEDULES[number % len(SCHEDULES)]
        text = CONTRACT.format(name=name, schedule=schedule, owner=owner, delegates=delegates)
        (contracts / f"{name}.prose.md").write_text(text, encoding="utf-8")
        schedules[name] = schedule
    machines = [Machine(tmp, handle, remote) for handle in (*MEMBERS, JOINER)]
    hz, runner = group(), CliRunner()
    for machine in machines:
        env = machine.env(START)
        for name in schedules:
            for args in (
                ["heinzel", "new", "--from", str(contracts / f"{name}.prose.md")],
                ["approve", name],
            ):
                done = runner.invoke(hz, args, env=env, catch_exceptions=False)
                assert done.exit_code == 0, (args, done.output)
    # ana starts the roster on hz/state with every member but fay, each change a commit
    # she signs, and installs the hook, which reads the roster from hz/state
    owner = machines[0]
    for machine in machines[1 : len(MEMBERS)]:
        _hz(owner, START, "team", "roster", "add", machine.handle, str(machine.public))
    _hz(owner, START, "team", "hook", str(remote))
    return remote, machines, schedules


def _hz(machine: Machine, now: datetime, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "heinzel", *args],
        env=machine.env(now),
        capture_output=True,
        text=True,
        check=True,
    )


FORGED = ("rc-" + "f" * 24, "rc-" + "e" * 24, "rc-" + "d" * 24)


def _hostile(remote: Path, name: str, slot: datetime, now: datetime) -> tuple[bool, list[str]]:
    """A forger with push access and no key on the roster: a forged turn.finished for
    ``name``'s coming ``slot`` (token 999), a line by a handle off the roster, and an
    unsigned one as the lease's holder under its current token, pushed to hz/state
    (the hook must refuse it: False when it landed), then written straight onto the bare
    repository's hz/state (as a server without the hook would take it). Also how a
    lint names each forged line (``by '<by>', turn.finished <key>``)."""
    team = team_id(name)
    lease = json.loads(
        subprocess.run(
            ["git", "-C", str(remote), "log", "-1", "--format=%B", f"refs/hz/lease/{team}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    at = _ts(slot).replace("Z", ".000Z")
    base = {
        "kind": "turn.finished",
        "team": team,
        "at": at,
        "key": f"{team}@{at}",
        "cause": "schedule",
        "disposition": "skipped",
        "cost_usd": 0.0,
        "contract_fp": None,
        "input_fps": [],
        "draft_hash": None,
    }
    lines = [
        {**base, "id": FORGED[0], "by": "ben", "token": 999},
        {**base, "id": FORGED[1], "by": "mallory", "token": 1},
        {**base, "id": FORGED[2], "by": lease["holder"], "token": lease["token"]},
    ]
    git = ["git", "-C", str(remote)]
    env = {
        **os.environ,
        "GIT_INDEX_FILE": str(remote / "hostile.index"),
        "GIT_AUTHOR_NAME": "x",
        "GIT_AUTHOR_EMAIL": "",
        "GIT_COMMITTER_NAME": "x",
        "GIT_COMMITTER_EMAIL": "",
    }

    def run(*args: str, stdin: str | None = None) -> str:
        return subprocess.run(
            [*git, *args], input=stdin, capture_output=True, text=True, check=True, env=env
        ).stdout.strip()

    tip = run("rev-parse", "refs/heads/hz/state")
    path = f"{team}/{at[:10]}.jsonl"
    run("read-tree", tip)
    old = subprocess.run([*git, "show", f"{tip}:{path}"], capture_output=True, text=True).stdout
    blob = run(
        "hash-object",
        "-w",
        "--stdin",
        stdin=old + "".join(json.dumps(r, sort_keys=True) + "\n" for r in lines),
    )
    run("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}")
    commit = run("commit-tree", run("write-tree"), "-p", tip, "-m", "hostile")
    pushed = subprocess.run(
        [*git, "push", str(remote), f"{commit}:refs/heads/hz/state"],
        capture_output=True,
        text=True,
        check=False,
        env={**env, "HZ_NOW": _ts(now)},
    )
    run("update-ref", "refs/heads/hz/state", commit)
    return pushed.returncode != 0, [f"by '{r['by']}', turn.finished {r['key']}" for r in lines]


def _force_push(remote: Path, back: int = 3) -> bool:
    """Set the bare repository's hz/state back ``back`` commits, as a member's force-push
    would (the receipts of those commits dropped)."""
    git = ["git", "-C", str(remote)]
    done = subprocess.run(
        [*git, "rev-parse", "--verify", "--quiet", f"refs/heads/hz/state~{back}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        return False
    subprocess.run([*git, "update-ref", "refs/heads/hz/state", done.stdout.strip()], check=True)
    return True


def _slots(schedule: str, until: datetime) -> list[datetime]:
    found, slot = [], START
    while (slot := next_slot(schedule, "UTC", slot)) is not None and slot <= until:  # type: ignore[assignment]
        found.append(slot)
    return found


def main() -> None:
    days = int(os.environ.get("HZ_SOAK_TEAM_DAYS", "30"))
    count = int(os.environ.get("HZ_SOAK_TEAM_N", "100"))
    chance = random.Random(int(os.environ.get("HZ_SOAK_TEAM_SEED", "7")))
    kills = float(os.environ.get("HZ_SOAK_TEAM_KILLS", "0.15"))
    end = START + timedelta(days=days)
    with tempfile.TemporaryDirectory() as tmp:
        began = time.perf_counter()
        remote, machines, schedules = _setup(Path(tmp), count)
        setup_s = time.perf_counter() - began
        totals: Counter[str] = Counter()
        lint_times: list[tuple[int, float, int]] = []
        last_problems: list[str] = []
        hostile_at = START + timedelta(days=days // 2, hours=7)
        rewrites = [
            START + timedelta(days=days // 3, hours=12),
            START + timedelta(days=2 * days // 3, hours=12),
        ]
        late_until = START + timedelta(days=3)
        joins = START + STEP * max(1, days)  # a quarter into the run
        refused, forged = False, [f"forged line {n}" for n in range(len(FORGED))]
        errors: Counter[str] = Counter()
        now = START + STEP
        while now <= end:
            away = MEMBERS[(now - START).days % len(MEMBERS)]
            present = [
                m
                for m in machines
                if m.handle != away
                and not (m.handle == LATE and now < late_until)
                and not (m.handle == JOINER and now <= joins)
            ]
            chance.shuffle(present)
            running = [(m, m.tick(now), chance.random() < kills) for m in present]
            for machine, process, kill in running:
                if kill:
                    time.sleep(chance.uniform(0.0, 2.0))
                    process.send_signal(signal.SIGKILL)
                    process.communicate()
                    totals["kills"] += 1
                    process = machine.tick(now)  # the timer's next run
                out, _ = process.communicate(timeout=900)
                report = json.loads(out) if out.strip() else {}
                team = report.get("team") or {}
                for name in ("pushes", "lease_pushes", "conflicts", "lease_conflicts"):
                    totals[name] += int(team.get(name) or 0)
                totals["ticks"] += 1
                totals["errors"] += len(report.get("errors") or [])
                errors.update(str(e)[:600] for e in report.get("errors") or [])
                notices = report.get("notices") or []
                totals["notices"] += len(notices)
                totals["rewrite notices"] += sum("rewritten" in n for n in notices)
            if any(at <= now < at + STEP for at in rewrites) and _force_push(remote):
                totals["rewrites"] += 1
                linter = machines[(totals["rewrites"]) % len(machines)]  # lint between
                done = subprocess.run(
                    [sys.executable, "-m", "heinzel", "team", "lint", "--json"],
                    env=linter.env(now),
                    capture_output=True,
                    text=True,
                    check=False,
                )
                said = json.loads(done.stdout).get("notices", []) if done.stdout else []
                totals["notices"] += len(said)
                totals["rewrite notices"] += sum("rewritten" in n for n in said)
                totals["lint rewrite notices"] += sum("rewritten" in n for n in said)
            if joins <= now < joins + STEP:  # fay joins: ana's signed roster change
                _hz(machines[0], now, "team", "roster", "add", JOINER, str(machines[-1].public))
                totals["roster changes"] += 1
            if hostile_at <= now < hostile_at + STEP:
                refused, forged = _hostile(remote, "duty-000", now + timedelta(hours=3), now)
            if ((now - START).days % 7 == 6 and now.hour == 18) or now + STEP > end:
                lint_began = time.perf_counter()
                done = subprocess.run(
                    [sys.executable, "-m", "heinzel", "team", "lint", "--json"],
                    env=machines[0].env(now),
                    capture_output=True,
                    text=True,
                    check=False,
                )
                said = json.loads(done.stdout)["problems"] if done.stdout else None
                problems = len(said) if said is not None else -1
                lint_times.append(((now - START).days, time.perf_counter() - lint_began, problems))
                last_problems = said or []
            now += STEP
        quarantined = {}  # every member's lint: the forged lines it quarantined
        for machine in machines:
            done = subprocess.run(
                [sys.executable, "-m", "heinzel", "team", "lint", "--json"],
                env=machine.env(end),
                capture_output=True,
                text=True,
                check=False,
            )
            said = json.loads(done.stdout)["problems"] if done.stdout else []
            quarantined[machine.handle] = sum(any(f in p for p in said) for f in forged)
        size = sum(
            int(line.split()[3])
            for line in subprocess.run(
                ["git", "-C", str(remote), "ls-tree", "-r", "-l", "hz/state"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.splitlines()
        )
        names: dict[str, str] = {}
        started: Counter[tuple[str, str]] = Counter()
        first: dict[tuple[str, str], datetime] = {}
        hz, runner = group(), CliRunner()
        for machine in machines:
            listed = runner.invoke(hz, ["heinzel", "list", "--json"], env=machine.env(end))
            names.update({row["id"]: row["name"] for row in json.loads(listed.output)})
            for local, slot, at in machine.started():
                key = (names[local], slot[:19] + "Z")
                started[key] += 1
                moment = datetime.fromisoformat(at.replace("Z", "+00:00"))
                first[key] = min(first.get(key, moment), moment)
    # slots due: every slot a tick after it has run by the end (the last round's slots
    # may still be waiting for the next tick)
    due = {
        (name, _ts(slot))
        for name, schedule in schedules.items()
        for slot in _slots(schedule, end - STEP)
    }
    once = sum(1 for key in due if started[key] == 1)
    doubles = sum(1 for key, n in started.items() if n > 1)
    # a slot that did not run while a later slot of the same one did was coalesced (the
    # latest-slot rule: its owner's lease outlived its daemon); lost is one with neither
    ran = {name: sorted(slot for (n, slot) in started if n == name) for name in schedules}
    missed = [key for key in due if started[key] == 0]
    coalesced = [key for key in missed if any(slot > key[1] for slot in ran[key[0]])]
    lost = sorted(key for key in missed if key not in coalesced)
    waits = [
        first[k] - datetime.fromisoformat(k[1].replace("Z", "+00:00")) for k in due if k in first
    ]
    hours = days * 24
    print(
        f"{len(machines)} daemons, {count} team Heinzelmännchen, {days} days, "
        f"{totals['ticks']} ticks, {totals['kills']} SIGKILLs (setup {setup_s:.0f} s)"
    )
    print(
        f"slots due {len(due)}, run exactly once {once}, doubles {doubles}, "
        f"coalesced into a later slot {len(coalesced)}, lost {len(lost)}"
        + (f" (first lost: {lost[:3]})" if lost else "")
    )
    print(
        f"pushes per hour: {totals['pushes'] / hours:.2f} receipts, "
        f"{totals['lease_pushes'] / hours:.2f} leases and claims; "
        f"{totals['conflicts']} receipt retries, {totals['lease_conflicts']} lease races lost, "
        f"{totals['errors']} tick errors"
    )
    for error, seen in errors.most_common(5):
        print(f"  tick error x{seen}: {error}")
    print(f"hz/state: {size / 1024:.1f} KiB after {days} days")
    print(
        "hz team lint: "
        + ", ".join(f"day {d}: {s:.2f} s ({p} quarantined)" for d, s, p in lint_times)
    )
    print(f"worst wait from a slot to its turn: {max(waits, default=timedelta(0))}")
    for problem in last_problems:  # what the last lint quarantined, and why
        print(f"  quarantined: {problem.split(': ', 1)[-1][:160]}")
    print(
        f"notices {totals['notices']}: {totals['rewrites']} force-pushes announced "
        f"{totals['rewrite notices']} times ({totals['lint rewrite notices']} by the hz team "
        "lint run between a force-push and the next tick)"
    )
    print(
        f"roster: {totals['roster changes']} change signed by the owner ana mid-run "
        f"({JOINER} added on day {(joins - START).days}); the forger's push "
        + ("refused by the hook" if refused else "NOT refused by the hook")
        + "; forged lines quarantined per member: "
        + ", ".join(f"{h} {n}/{len(FORGED)}" for h, n in quarantined.items())
    )
    if doubles or lost or not refused or min(quarantined.values()) < len(FORGED):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
