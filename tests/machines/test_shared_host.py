"""Several processes on one directory (issue 40, item 2): `Host(..., shared=True)` in two
real processes over one spine, each running every order (one forwards, one backwards),
SIGKILLed at seeded points and started again: each key runs in one process at a time,
so every e-mail and payment happens once, every order ends done, the chain verifies.

The held-out host's steps (tests/machines/heldout_host.py) are the job: a page (a tool
NOT replay-safe), a replay-safe read, a probed e-mail and a probed payment."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from ledger.reading import read_events
from ledger.spine import verify
from tests.machines.heldout_host import lines

ROOT = Path(__file__).resolve().parents[2]
ORDERS = {f"o{n}": 10 * n for n in range(1, 7)}
CUSTOMERS = {order: f"{order}@example.org" for order in ORDERS}
KILLS = int(os.environ.get("HZ_SOAK_KILLS", "16"))
SEED = int(os.environ.get("HZ_SOAK_SEED", "40"))

CHILD = """
import asyncio, json, os, signal, sys
from datetime import UTC, datetime
from pathlib import Path
from machines import Host
from tests.machines.heldout_host import Shop

root, at, backwards = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "backwards"
seen = 0

def hook(_what):
    global seen
    seen += 1
    if seen == at:  # a real SIGKILL: no cleanup, no flush, nothing after
        os.kill(os.getpid(), signal.SIGKILL)

async def main():
    clock = lambda: datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    orders = list(json.loads((root / "orders.json").read_text()))
    if backwards:
        orders.reverse()
    host = Host(Shop(root, hook), root / "spine", clock=clock, on_durable=[hook],
                max_resumes=99, shared=True, lock_timeout=300, concurrency=2)
    states = await asyncio.gather(*(host.run(f"shop@order:{o}") for o in orders))
    host.close()
    return {o: f"{s.state} {s.disposition}" for o, s in zip(orders, states)}

print(json.dumps(asyncio.run(main())))
"""
"""One process: ``python -c CHILD ROOT N forwards|backwards``, SIGKILLed at its N-th point
(a spine append made durable, or a write to its world); N = 0: never."""


def start(root: Path, at: int, way: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(root), str(at), way],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def broken_promises(root: Path) -> list[str]:
    """What was performed against what was intended: each e-mail and payment once,
    each page at most once, each order's last turn done, the chain whole."""
    world = Counter(line.split(" ")[0] for line in lines(root / "world.log"))
    pages = Counter(lines(root / "tools.log"))
    spine = root / "spine" / "session.jsonl"
    keys = {e.turn: e.key for e in read_events(spine) if e.kind == "turn.started"}
    ends = {
        keys[e.turn]: e.data.get("disposition")
        for e in read_events(spine)
        if e.kind == "turn.finished"
    }
    broken = []
    for order in ORDERS:
        for key in (f"shop@mail:{order}", f"shop@pay:{order}"):
            if world[key] != 1:
                broken.append(f"{key}: performed {world[key]} times, intended once")
        if pages[f"page:{order}"] > 1:
            broken.append(f"page:{order} ran {pages[f'page:{order}']} times")
        if ends.get(f"shop@order:{order}") != "done":
            broken.append(f"{order} ended {ends.get(f'shop@order:{order}')}")
    if sum(world.values()) != 2 * len(ORDERS):
        broken.append(f"world.log holds {dict(world)}")
    if not verify(spine).ok:
        broken.append("the chain does not verify")
    return broken


def one_round(root: Path, rng: random.Random, kills_left: int) -> tuple[int, int]:
    """Two processes run every order at once over ``root``'s spine, each SIGKILLed at a
    seeded point and started again (up to ``kills_left`` kills) until both finish: the
    kills and the runs it took."""
    root.mkdir()
    (root / "orders.json").write_text(json.dumps(ORDERS), encoding="utf-8")
    (root / "customers.json").write_text(json.dumps(CUSTOMERS), encoding="utf-8")
    points = len(ORDERS) * 9  # half a clean run's points (15 appends, 3 world writes each)
    kills = runs = 0
    ways = ("forwards", "backwards")
    running = {way: start(root, rng.randint(1, points), way) for way in ways}
    while running:
        for way, process in list(running.items()):
            try:
                out, err = process.communicate(timeout=0.05)  # polls the two in turn
            except subprocess.TimeoutExpired:
                continue
            runs += 1
            if process.returncode == -9:
                kills += 1
                at = rng.randint(1, points) if kills < kills_left else 0
                running[way] = start(root, at, way)
                continue
            assert process.returncode == 0, err
            assert set(json.loads(out).values()) == {"finished done"}
            del running[way]
    return kills, runs


@pytest.mark.kill
def test_two_processes_on_one_directory_under_sigkills_act_once_per_key(tmp_path: Path) -> None:
    """Rounds of two processes over one spine, SIGKILLed at seeded points: per round,
    every e-mail and payment once, every order done, the chain whole."""
    rng = random.Random(SEED)
    kills = runs = rounds = 0
    while kills < KILLS:
        root = tmp_path / f"round-{rounds}"
        rounds += 1
        killed, ran = one_round(root, rng, KILLS - kills)
        kills, runs = kills + killed, runs + ran
        assert broken_promises(root) == [], root.name
    print(
        f"two processes, one spine: {kills} SIGKILLs in {runs} runs over {rounds} rounds; "
        f"{rounds * len(ORDERS)} orders, each e-mail and payment once"
    )


TAKE_TURNS = """
import asyncio, json, sys, time
from datetime import UTC, datetime
from pathlib import Path
from machines import Host
from tests.machines.heldout_host import Shop

root, first, then, shared = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4] == "shared"

async def main():
    clock = lambda: datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    host = Host(Shop(root), root / "spine", clock=clock, shared=shared, lock_timeout=120)
    state = await host.run(f"shop@order:{first}")
    print(first, state.state, flush=True)
    if then != "-":
        for _ in range(1200):  # the other process's job, run meanwhile; at most a minute
            if (root / "other-done").exists():
                break
            await asyncio.sleep(0.05)
        else:
            sys.exit(3)
        state = await host.run(f"shop@order:{then}")
        print(then, state.state, flush=True)
    else:
        (root / "other-done").write_text("")
    host.close()

asyncio.run(main())
"""
"""``python -c TAKE_TURNS ROOT FIRST THEN shared|held``: run the order FIRST, then (unless
THEN is ``-``) wait for the other process to have run its job and run THEN; with THEN
``-``, say so by a file once FIRST has run."""


def test_a_shared_host_lets_another_process_run_jobs_between_its_own(tmp_path: Path) -> None:
    """Process A runs a job, then waits for process B to run one before its next: with
    shared=True B gets the lock between A's jobs (a Host that kept the lock from its
    first run to close would leave B waiting and A waiting for B)."""
    orders = {"a1": 1, "a2": 2, "b1": 3}
    (tmp_path / "orders.json").write_text(json.dumps(orders), encoding="utf-8")
    (tmp_path / "customers.json").write_text(
        json.dumps({o: f"{o}@example.org" for o in orders}), encoding="utf-8"
    )
    run = [sys.executable, "-c", TAKE_TURNS, str(tmp_path)]
    a = subprocess.Popen([*run, "a1", "a2", "shared"], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert a.stdout is not None and a.stdout.readline() == "a1 finished\n"
    b = subprocess.run(
        [*run, "b1", "-", "shared"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    out, _ = a.communicate()
    assert (b.returncode, b.stdout) == (0, "b1 finished\n"), b.stderr
    assert (a.returncode, out) == (0, "a2 finished\n")
    world = Counter(line.split(" ")[0] for line in lines(tmp_path / "world.log"))
    assert world == Counter({f"shop@{e}:{o}": 1 for o in orders for e in ("mail", "pay")})


UVICORN = [sys.executable, "-m", "uvicorn", "tests.machines.shared_web:app", "--workers", "2"]
UVICORN += ["--log-level", "info", "--no-access-log"]  # its stderr is read only at the start


def _post_until_answered(port: int, order: str) -> dict[str, str]:
    """POST the order until a worker answers it (a worker killed mid-request drops the
    connection; the next try reaches the other worker, or the one uvicorn started anew)."""
    import httpx

    for _ in range(500):
        try:
            reply = httpx.post(f"http://127.0.0.1:{port}/orders/{order}", timeout=120)
        except httpx.TransportError:
            continue
        if reply.status_code == 200:
            return dict(reply.json())
    raise AssertionError(f"{order}: no worker answered")


@pytest.mark.kill
def test_uvicorn_with_two_workers_under_sigkills_acts_once_per_order(tmp_path: Path) -> None:
    """uvicorn --workers 2 over one directory, each order posted twice at once, workers
    SIGKILLed at seeded points (uvicorn starts a new one): every answer is the order's
    own finished job, every e-mail and payment once."""
    import socket
    from concurrent.futures import ThreadPoolExecutor

    (tmp_path / "orders.json").write_text(json.dumps(ORDERS), encoding="utf-8")
    (tmp_path / "customers.json").write_text(json.dumps(CUSTOMERS), encoding="utf-8")
    rng = random.Random(SEED)
    points = [rng.randint(1, len(ORDERS) * 9) for _ in range(6)]
    (tmp_path / "kills.json").write_text(json.dumps(points), encoding="utf-8")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [*UVICORN, "--port", str(port)],
        cwd=ROOT,
        env={**os.environ, "HZ_WEB_ROOT": str(tmp_path)},
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stderr is not None
        for line in server.stderr:  # the socket listens once the parent says so
            if "Uvicorn running on" in line:
                break
        orders = [order for order in ORDERS for _ in range(2)]
        with ThreadPoolExecutor(max_workers=len(orders)) as pool:
            answers = list(pool.map(lambda o: _post_until_answered(port, o), orders))
    finally:
        server.terminate()
        server.communicate(timeout=60)
    assert answers == [{"state": "finished", "disposition": "done"}] * len(orders)
    assert broken_promises(tmp_path) == []
    kills = lines(tmp_path / "kills.log")
    print(f"uvicorn --workers 2: {len(kills)} SIGKILLs; {len(ORDERS)} orders, each once")
    assert kills
