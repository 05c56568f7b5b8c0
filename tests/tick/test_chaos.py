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

The short run is part of `make test`; `make soak` runs the long one (``HZ_SOAK_ROUNDS``),
``HZ_SOAK_SEED`` picks another seed. The processes are forked from the fork server
(tests/forkhz.py): a wake's process takes about 0.2 s there against 0.7 s exec'd, so more
of them overlap.
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
from pathlib import Path
from typing import Any

import pytest

from ledger.reading import read_events
from machines.journal import expand_carried
from tests import forkhz
from tests.tick.homes import CODED, FRIDAY, HZ, claims_in, env, hz, make_home, tick

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
