"""Chaos (issue 11, finding 15): ticks, wakes, chats, approvals, list and show from many
real `hz` processes against one home at once, a seeded share of them killed at a seeded
append (``HZ_CRASH_AT``, a real exit 137 mid-work; a wake killed alone before the rounds
makes sure every seed has a dead turn to recover), then ticks until quiet. Nothing may
trace, no slot may be drafted twice, no draft may sit in a document that its spine does
not record, every chain verifies and the index equals a rebuild.

It also damages the world between rounds the way issue 11's findings did: the index is
deleted once, a garbage line is appended to one spine (of the Heinzelmännchen the round's
two chats go to, so a process opens it for writing after), and each round sends two chats
to one Heinzelmännchen at once; every chat must then have exactly one claim on the spine
(steered into one turn, or the key of one turn of its own, never both, never none), and
every steer a model request after it (unless the resume rules abandoned its turn).

The second test is the storm of every surface (issue 38, item 10): the chaos model's
rules (tests/tick/test_model_chaos.py) drawn by the seed, with its invariants, printing
its figures (processes, kills, chats, delivered twice, lost, doubles, spend against the
provider's takings, chains verified, uncoded exits).

The short runs are part of `make test`; `make soak` runs the long ones (``HZ_SOAK_ROUNDS``,
``HZ_SOAK_STORM_STEPS``), ``HZ_SOAK_SEED`` picks another seed. The processes are forked
from the fork server (tests/forkhz.py): a wake's process takes about 0.2 s there against
0.7 s exec'd, so more of them overlap.
"""

from __future__ import annotations

import json
import os
import random
import re
import sqlite3
import subprocess
from collections import Counter
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from ledger.reading import read_events
from machines.stores.journal import expand_carried
from tests import forkhz
from tests.tick.chaos_world import CODED as STARTS_CODED
from tests.tick.chaos_world import FAULTS, NANO, SLOT, WAKE_ID, Spines, approval_part
from tests.tick.homes import CODED, FRIDAY, HZ, claims_in, env, hz, make_home, tick
from tests.tick.test_model_chaos import BAD_SKILLS, READER, STYLED, WITH_ID, Chaos

NAMES = ["report-0", "report-1", "report-2"]
ROUNDS = int(os.environ.get("HZ_SOAK_ROUNDS", "4"))
PER_ROUND = 6
SEED = int(os.environ.get("HZ_SOAK_SEED", "11"))
NOT_DERIVED = {"tick_sources", "tick_seen"}
MARKER = re.compile(r"<!-- hz:draft key=(\S+) -->")


def _command(rng: random.Random, round_: int) -> list[str]:
    name = rng.choice(NAMES)
    return rng.choice(
        [
            ["system", "daemon", "tick"],
            ["heinzel", "wake", name, "--message", f"round {round_}"],
            ["heinzel", "chat", name, f"note {round_} for {name}"],
            ["approve", name],
            ["heinzel", "list"],
            ["heinzel", "show", name],
        ]
    )


def _rows(index: Path) -> dict[str, list[tuple[object, ...]]]:
    with sqlite3.connect(index) as db:
        tables = [
            row[0]
            for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if not row[0].startswith("sqlite_") and row[0] not in NOT_DERIVED
        ]
        return {t: sorted(db.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in tables}


def _received_steers(events: list[Any]) -> list[str]:
    """The request ids steered into a turn whose model then received them."""
    waiting: dict[str, list[str]] = {}
    received: list[str] = []
    for event in events:
        if event.kind == "turn.steered":
            waiting.setdefault(str(event.turn), []).append(str(event.data["request_id"]))
        elif event.kind == "model.request":
            received += waiting.pop(str(event.turn), [])
    return received


def _chats(inbox: Path) -> list[str]:
    """The request ids of the chats in an inbox (every one was sent to reach a model run)."""
    found = []
    for path in sorted(inbox.glob("rq-*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("kind") == "chat":
            found.append(str(data["request_id"]))
    return found


@pytest.mark.slow
def test_many_processes_with_kills_then_quiet_keep_every_promise(tmp_path: Path) -> None:
    """Seeded concurrent hz processes, some killed mid-append: no traceback, no double or
    orphan draft, every chain verifies, the index equals a rebuild."""
    rng = random.Random(SEED)
    root, ids = make_home(tmp_path, len(NAMES))
    start = datetime.fromisoformat(FRIDAY.replace("Z", "+00:00"))
    outcomes: list[tuple[list[str], int, str]] = []
    # one kill every seed has (a seed may give its crash points only to processes that
    # append fewer lines or are refused): a wake killed after its first line, alone
    killed = hz(root, "heinzel", "wake", NAMES[0], HZ_NOW=FRIDAY, HZ_CRASH_AT="append:1")
    assert killed.returncode == 137, killed.stderr
    for round_ in range(ROUNDS):
        now = (start + timedelta(hours=round_)).strftime("%Y-%m-%dT%H:%M:%SZ")
        running = []
        if round_ == 1:
            (root / "home" / "heinzel" / "index.sqlite").unlink(missing_ok=True)
        twice = rng.choice(NAMES)
        if round_ == 2:
            # the spine of the one the twin chats go to: some process of this round opens it
            # to write, which contains the line (one no process opened again would stay a
            # break that verify reports, as it should)
            spine_path = root / "home" / "heinzel" / ids[NAMES.index(twice)] / "session.jsonl"
            with spine_path.open("a") as spine:
                spine.write("not json at all\n")
        commands = [["heinzel", "chat", twice, f"twin {round_}.{n}"] for n in (1, 2)]
        commands += [_command(rng, round_) for _ in range(PER_ROUND)]
        for args in commands:
            extra = {"HZ_CRASH_AT": f"append:{rng.randint(1, 6)}"} if rng.random() < 0.35 else {}
            running.append(
                (
                    args,
                    forkhz.Popen(
                        [HZ, *args],
                        cwd=root,
                        env=env(root, now, **extra),
                        stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE,
                        text=True,
                    ),
                )
            )
        for args, process in running:
            _, err = process.communicate()
            outcomes.append((args, process.returncode, err))
    assert [(a, err) for a, _, err in outcomes if "Traceback" in err] == []
    uncoded = [(a, c, e) for a, c, e in outcomes if c not in (0, 137) and not CODED.search(e)]
    assert uncoded == []
    # tick to quiet: a bounded number of ticks until one wakes nothing
    last = (start + timedelta(hours=ROUNDS)).strftime("%Y-%m-%dT%H:%M:%SZ")
    for _ in range(8):
        report = tick(root, HZ_NOW=last)
        if not report["woken"]:
            break
    assert report["woken"] == []
    home = root / "home" / "heinzel"
    for heinzel_id, name in zip(ids, NAMES, strict=True):
        placed = [
            str(e.key)
            for e in expand_carried(read_events(home / heinzel_id / "session.jsonl"))
            if e.kind == "draft.placed"
        ]
        assert [k for k, n in Counter(placed).items() if n > 1] == []  # no double draft
        marked = MARKER.findall((root / f"{name}.md").read_text(encoding="utf-8"))
        assert [k for k, n in Counter(marked).items() if n > 1] == []
        assert sorted(set(marked) - set(placed)) == []  # no orphan draft
        events = list(read_events(home / heinzel_id / "session.jsonl"))
        claims = claims_in(events, heinzel_id)  # one message, one turn: one claim each
        assert [r for r, n in claims.items() if n > 1] == []  # steered or its own, not both
        chats = _chats(home / heinzel_id / "inbox")
        assert [r for r in chats if claims[r] == 0] == []  # and none was lost
        # a steer's model request comes after it, unless the resume rules gave its turn up
        received = set(_received_steers(events))
        ended = {e.turn: e.data.get("disposition") for e in events if e.kind == "turn.finished"}
        unreceived = [
            (e.turn, ended.get(e.turn))
            for e in events
            if e.kind == "turn.steered" and str(e.data["request_id"]) not in received
        ]
        assert [u for u in unreceived if u[1] != "abandoned"] == []
    verified = hz(root, "heinzel", "verify", HZ_NOW=last)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    before = _rows(home / "index.sqlite")
    rebuilt = hz(root, "heinzel", "reindex", HZ_NOW=last)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert _rows(home / "index.sqlite") == before


STORM_STEPS = int(os.environ.get("HZ_SOAK_STORM_STEPS", "12"))
"""Steps of the storm of every surface (`make soak`: 400, some 330 `hz` processes)."""
STORM = [  # (weight, rule): what a step of the storm does, drawn by the seed
    (6, "chat"),
    (3, "chat_again"),
    (3, "tick"),
    (3, "wake"),
    (3, "kill"),
    (12, "kill_in_think"),
    (2, "approve"),
    (2, "verb"),
    (2, "retry_with_id"),
    (2, "retry_again"),
    (1, "question"),
    (1, "mcp"),
    (1, "page"),
    (1, "read"),
    (1, "dismiss"),
    (1, "wake_twice"),
    (1, "person"),
    (1, "weather"),
    (1, "identical_drafts"),
    (1, "forget_while_running"),
    (1, "source_moves"),
    (1, "mcp_frames"),
    (1, "page_together"),
    (1, "flip"),
    (1, "hard_link"),
    (1, "bad_skill"),
]


def _storm_step(machine: Chaos, rng: random.Random) -> None:
    """One seeded step: a rule of the model (tests/tick/test_model_chaos.py) with its
    arguments; three in five of the processes started with a crash point (a real exit 137)."""
    rule = rng.choices([r for _, r in STORM], weights=[w for w, _ in STORM])[0]
    name = rng.choice(["report-0", "report-1"])
    crash = rng.randint(1, 5) if rng.random() < 0.6 else None
    if rule == "chat":
        machine.chat(name, with_id=rng.random() < 0.6, crash=crash)
    elif rule == "chat_again" and machine.sent:
        machine.chat_again(rng.randrange(1 << 16))
    elif rule == "tick":
        machine.tick(rng.choice(["none", "minutes", "next-slot"]), crash)
    elif rule == "wake":
        machine.wake(name, crash)
    elif rule == "kill":
        machine.kill(rng.randrange(1 << 16))
    elif rule == "kill_in_think":
        machine.kill_in_think(name, rng.choice(["wake", "chat", "tick"]))
    elif rule == "approve":
        machine.approve(name, rng.choice(["document", "command"]))
    elif rule == "verb":
        machine.verb(name, rng.choice(["answer yes", "answer in words", "retry", "stop"]))
    elif rule == "retry_with_id":
        machine.retry_with_id(name, crash)
    elif rule == "retry_again" and machine.retried:
        machine.retry_again(rng.randrange(1 << 16), rng.random() < 0.5)
    elif rule == "question":
        machine.question(name, rng.choice(["resend", "delivered-then-asked", "by-question"]))
    elif rule == "mcp":
        machine.mcp(name, rng.choice(["chat", "chat again", "answer", "retry"]), rng.randrange(99))
    elif rule == "wake_twice" and WITH_ID["wake"]:
        machine.wake_twice(name, rng.random() < 0.5)
    elif rule == "dismiss":
        machine.dismiss(name)
    elif rule == "read":
        machine.read(crash)
    elif rule == "page":
        machine.page(name, rng.choice(["chat", "answer", "approve", "retry", "stop", "wake"]))
    elif rule == "person":
        machine.person(name, rng.choice(["forget", "show", "lessons"]), rng.randint(1, 40))
    elif rule == "weather":
        machine.weather(rng.choice(["fair", "fair", "fail", "ask", "slow", *FAULTS]))
    elif rule == "identical_drafts":
        machine.identical_drafts(name)
    elif rule == "forget_while_running":
        machine.forget_while_running(name, rng.randint(1, 6))
    elif rule == "source_moves":
        machine.source_moves(rng.random() < 0.5)
    elif rule == "mcp_frames":
        ident = rng.choice(['{"n":1}', "[1]"])
        machine.mcp_frames(name, rng.choice(["cli", "mcp"]), ident, rng.random() < 0.5)
    elif rule == "page_together":
        machine.page_together(name)
    elif rule == "flip":
        machine.flip(rng.choice([STYLED, READER]), rng.choice(["json", "prev"]))
    elif rule == "hard_link":
        machine.hard_link(name, rng.random() < 0.5)
    elif rule == "bad_skill":
        machine.bad_skill(rng.choice(sorted(BAD_SKILLS)), name)


def _figures(machine: Chaos) -> dict[str, Any]:
    """The storm's figures, read from the files (tests/tick/chaos_world.py's `Spines`)."""
    facts = Spines.read(machine.root / "home")
    ended = machine.ledger.ended
    paid = sum((sum(c, Decimal(0)) for c in machine.provider.paid.values()), Decimal(0))
    spines = sorted((machine.root / "home" / "heinzel").glob("hz-*/session.jsonl"))
    return {
        "processes": machine.count,
        "kills": sum(1 for e in ended if e.killed),
        "chats": len(facts.chats),
        "delivered twice": sum(1 for k in facts.chats if facts.runs[k] > 1),
        "lost": sum(1 for k in facts.chats if not facts.runs[k] and not facts.ended_with[k]),
        "slots twice": sum(1 for k, n in facts.runs.items() if SLOT.match(k) and n > 1),
        "drafts twice": sum(1 for n in facts.drafts.values() if n > 1),
        "requests twice": sum(1 for n in facts.retries.values() if n > 1)
        + sum(1 for n in facts.answers.values() if n > 1)
        + sum(1 for k, n in facts.runs.items() if WAKE_ID.search(k) and n > 1),
        "approvals unseen": sum(
            1
            for k in facts.approved
            if not facts.approvals[k] and approval_part(k) not in facts.taken_approvals
        ),
        "reservations booked after a failure": len(facts.kept),
        "spend recorded (model.request)": sum(facts.spent.values(), Decimal(0)).quantize(NANO),
        "spend the caps count (recorded, and reservations a kill left open)": _caps_count(
            machine.root / "home"
        ),
        "provider's takings": paid.quantize(NANO),
        "paid, then killed before its line (at most)": sum(
            machine.ledger.unrecorded.values(), Decimal(0)
        ).quantize(NANO),
        "chains verified": f"{len(spines) - len({b.split()[0] for b in facts.broken})}"
        f" of {len(spines)}",
        "spines broken in the middle on purpose (named by verify, contained)": len(machine.flipped),
        "uncoded exits": sum(
            1
            for e in ended
            if "Traceback" in e.stderr
            or (e.code != 0 and not e.killed and not STARTS_CODED.match(e.stderr))
        ),
    }


def _caps_count(home: Path) -> Decimal:
    """What the caps count on every day the spines hold, from the spines alone
    (`heinzel.session.spend.spent_on_spines`: each turn's `model.request` lines and each
    reservation no request settled or `model.released` let go, as a killed process leaves
    it)."""
    from heinzel.session.spend import spent_on_spines
    from heinzel.store.home import Home

    days = {
        event.ts[:10]
        for spine in sorted((home / "heinzel").glob("hz-*/session.jsonl"))
        for event in read_events(spine, skip_damaged=True)
    }
    total = sum((Decimal(str(spent_on_spines(Home(home), day))) for day in days), Decimal(0))
    return total.quantize(NANO)


@pytest.mark.slow
def test_a_seeded_storm_of_every_surface_prints_its_figures() -> None:
    """The model's rules (chats with and without ids and their resends, ticks, approvals,
    answers, retries, stops, forget, dismissals, MCP tool calls, the page's buttons, the
    reader, a faulty provider) drawn by a seed, four `hz` processes at once, half with a
    crash point, and real SIGKILLs (of whatever runs, and while a request waits at the
    provider); then quiet and the figures `make soak` prints (docs/architecture.md keeps
    one run's). Every invariant of the model must hold (its teardown says which broke)."""
    rng = random.Random(SEED)
    machine = Chaos()
    try:
        for _ in range(STORM_STEPS):
            _storm_step(machine, rng)
            machine.promises_hold()
        machine._quiet()
        figures = _figures(machine)
        print(f"\nstorm figures (seed {SEED}, {STORM_STEPS} steps):")
        for what, value in figures.items():
            print(f"  {what}: {value}")
        # spend is what was paid: the lines never book more than the provider took, and
        # the caps (those lines and every reservation a kill left open) never count less
        caps = figures["spend the caps count (recorded, and reservations a kill left open)"]
        takings = figures["provider's takings"]
        assert figures["spend recorded (model.request)"] <= takings <= caps, figures
    finally:
        machine.teardown()
