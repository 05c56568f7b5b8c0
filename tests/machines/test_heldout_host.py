"""The held-out host (tests/machines/heldout_host.py), written on the short API, under the
crash matrix and a seeded loop of real processes SIGKILLed at seeded points.

Each order pages (a tool NOT replay-safe), reads its customer (replay-safe), mails and
pays (effects probed through ``world.log``, whose payment lines carry the running total).
Counted against what was intended: every e-mail and every payment exactly once, the total
right, the page at most once, and where the page was cut by a kill, ``INTERRUPTED``
reported (``paged: false`` on ``turn.finished``) instead of a second page.

The short loop is part of `make test`; `make soak` runs ``HZ_SOAK_KILLS`` kills
(``HZ_SOAK_SEED`` picks another seed).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from ledger.reading import read_events
from ledger.spine import verify
from machines import JOBS, Pins, TurnState, Wake
from machines.crashkit.matrix import Rig, run_matrix
from tests.machines.heldout_host import Shop, lines

ROOT = Path(__file__).resolve().parents[2]
HOST = Path(__file__).with_name("heldout_host.py")
KILLS = int(os.environ.get("HZ_SOAK_KILLS", "20"))
SEED = int(os.environ.get("HZ_SOAK_SEED", "31"))
ORDERS = {"o1": 250, "o2": 100, "o3": 40}
CUSTOMERS = {"o1": "ann@example.org", "o2": "bob@example.org", "o3": "cy@example.org"}

CHILD = """
import asyncio, os, signal, sys
from pathlib import Path
from tests.machines.heldout_host import run

at, seen = int(sys.argv[2]), 0

def hook(_what):
    global seen
    seen += 1
    if seen == at:  # a real SIGKILL: no cleanup, no flush, nothing after
        os.kill(os.getpid(), signal.SIGKILL)

print(asyncio.run(run(Path(sys.argv[1]), hook)))
"""
"""One process of the host: ``python -c CHILD ROOT N`` kills itself at its N-th point (a
spine append made durable, or a write to its world: a page, an e-mail, a payment)."""


def setup_world(root: Path, orders: dict[str, int]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "orders.json").write_text(json.dumps(orders), encoding="utf-8")
    (root / "customers.json").write_text(json.dumps(CUSTOMERS), encoding="utf-8")


def finished(spine: Path) -> dict[str, dict[str, object]]:
    """Each order's last ``turn.finished`` data, by order."""
    keys = {e.turn: e.key for e in read_events(spine) if e.kind == "turn.started"}
    return {
        str(keys[e.turn]).split(":")[1]: dict(e.data)
        for e in read_events(spine)
        if e.kind == "turn.finished"
    }


def count(root: Path, orders: dict[str, int]) -> tuple[dict[str, int], list[str]]:
    """What was performed against what was intended: each world line's count, and the
    broken promises (none when every e-mail and payment happened once and no page twice)."""
    world = Counter(lines(root / "world.log"))
    pages = Counter(lines(root / "tools.log"))
    done = finished(root / "spine" / "session.jsonl")
    broken, total = [], 0
    for order, amount in orders.items():
        total += amount
        for line in (f"shop@mail:{order}", f"shop@pay:{order} {total}"):
            if world[line] != 1:
                broken.append(f"{line}: performed {world[line]} times, intended once")
        if pages[f"page:{order}"] > 1:
            broken.append(f"page:{order} ran {pages[f'page:{order}']} times")
        end = done.get(order, {})
        if end.get("disposition") != "done":
            broken.append(f"{order} ended {end}")
        elif end.get("paged") and pages[f"page:{order}"] != 1:
            broken.append(f"{order} reported paged, but the page ran {pages[f'page:{order}']}")
    if sum(world.values()) != 2 * len(orders):
        broken.append(f"world.log holds {dict(world)}")
    if not verify(root / "spine" / "session.jsonl").ok:
        broken.append("the chain does not verify")
    interrupted = sum(1 for end in done.values() if end.get("paged") is False)
    return {"interrupted": interrupted, "pages": sum(pages.values())}, broken


def test_the_host_is_at_most_70_lines() -> None:
    """The host itself (its docstring and imports counted, blank lines not) fits 70 lines."""
    source = HOST.read_text(encoding="utf-8").splitlines()
    assert len([line for line in source if line.strip()]) <= 70


def test_the_host_runs_every_order_once_and_a_restart_does_nothing(tmp_path: Path) -> None:
    """Run as a program twice: each order finished once; the second run performs nothing."""
    setup_world(tmp_path, ORDERS)
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(tmp_path), "0"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert "finished done" in done.stdout
    assert count(tmp_path, ORDERS) == ({"interrupted": 0, "pages": 3}, [])


async def scenario(rig: Rig) -> TurnState:
    """The crash matrix's scenario: the host's steps over the rig's spine, one order; the
    world's crash points are its e-mail and payment writes."""
    if not (rig.workdir / "orders.json").exists():
        setup_world(rig.workdir, {"o1": 250})
    shop = Shop(rig.workdir, lambda line: rig.world.wrote() if line.startswith("shop@") else 0)
    state: TurnState = await rig.run(
        rig.journal(),
        shop,
        turn="t1",
        wakes=[Wake("job", "shop@order:o1", JOBS)],
        pins=Pins(),
        settings=replace(rig.settings, vocabulary=JOBS),
    )
    return state


@pytest.mark.slow
def test_the_crash_matrix_over_the_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real process killed at every spine append and every e-mail and payment write,
    then resumed: each effect once, the page at most once, the chain verifies, the turn
    ends done; a kill between the page's tool.called and the page reports INTERRUPTED."""
    monkeypatch.chdir(ROOT)
    report = run_matrix(
        "tests.machines.test_heldout_host:scenario", tmp_path, unsafe_tools=("page:o1",)
    )
    assert report.failures == []
    assert len(report.boundaries) >= 12
    interrupted = 0
    for name in report.boundaries:
        got, broken = count(tmp_path / name, {"o1": 250})
        assert broken == [], name
        interrupted += got["interrupted"]
    assert interrupted >= 1
    print(f"crash matrix: {len(report.boundaries)} boundaries, {report.runs} runs, 0 failures")


@pytest.mark.slow
def test_a_seeded_sigkill_loop_keeps_every_promise(tmp_path: Path) -> None:
    """Rounds of the host as real processes, each SIGKILLed at a seeded point until one
    run completes; per round, effects intended against effects performed."""
    rng = random.Random(SEED)
    points = len(ORDERS) * 18  # a clean run's points: 15 appends and 3 world writes per order
    kills = runs = rounds = interrupted = pages = 0
    while kills < KILLS:
        root = tmp_path / f"round-{rounds}"
        setup_world(root, ORDERS)
        rounds += 1
        while True:
            runs += 1
            done = subprocess.run(
                [sys.executable, "-c", CHILD, str(root), str(rng.randint(1, points))],
                cwd=ROOT,
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode == -9:
                kills += 1
                continue
            assert done.returncode == 0, done.stderr
            break
        got, broken = count(root, ORDERS)
        assert broken == [], root.name
        interrupted += got["interrupted"]
        pages += got["pages"]
    intended = rounds * len(ORDERS)
    print(
        f"kill loop (seed {SEED}): {kills} kills in {runs} runs over {rounds} rounds; "
        f"e-mails {intended}/{intended} once, payments {intended}/{intended} once; "
        f"pages {pages} of {intended} orders, {interrupted} reported INTERRUPTED, none twice"
    )
