"""The Postgres journal (machines/stores/pg_journal.py) against a real server: a temporary
cluster from the machine's ``initdb``/``pg_ctl`` (`tests.bench.peers.pg.cluster`; the
tests skip, with the reason, where those binaries are missing; `make test` installs
Debian's ``postgresql``).

What is checked: concurrent jobs of one Host each run once with their own state and the
events chain; a key another session holds is not run (single flight across processes by
the key's advisory lock, HZM103 naming the holder) and runs once it is free; the coded
refusals (HZM100, HZM102, HZM104); the same bad events refused with the same code by the
spine and by this journal; a job longer than its lease kept by its living worker (the
heartbeat) and resumed elsewhere once that worker is SIGKILLed; a worker killed between an
event's INSERT and COMMIT; the server restarted under two workers mid-job (they reconnect),
under ``run(key)`` (HZM105) and stopped for good under ``work`` (HZM106); and a kill loop: 4
worker processes draining the queue, SIGKILLed at seeded points (``HZ_SOAK_PG_KILLS`` kills
in `make soak`), every e-mail and payment exactly once, no page twice, no job lost, the
chain intact.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import random
import re
import select
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("psycopg", reason="psycopg 3 (the extra postgres) is not installed")

from machines import Acted, Host, MachineError, TurnContext, TypedSteps, effect
from machines.stores.pg_journal import connect, key_holder
from tests.bench.peers.pg import Cluster, cluster
from tests.machines.pg_worker import Long, Orders, clock, file_clock, lines, wall

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("pg_worker.py")
KILLS = int(os.environ.get("HZ_SOAK_PG_KILLS", "24"))
SEED = int(os.environ.get("HZ_SOAK_SEED", "41"))
WORKERS = 4

_names = itertools.count()


@pytest.fixture(scope="module")
def server() -> Iterator[Cluster]:
    with cluster(None) as made:
        if isinstance(made, str):
            pytest.skip(f"no Postgres server for the tests: {made}")
        yield made


@pytest.fixture
def url(server: Cluster) -> str:
    """A fresh database on the module's server."""
    name = f"hz{os.getpid()}_{next(_names)}"
    server.createdb(name)
    return server.url(name)


def quiet(_: object) -> None:
    """No hook."""


def events(url: str) -> list[tuple[str | None, str, dict[str, Any]]]:
    with connect(url) as conn:
        rows = conn.execute("SELECT line FROM hz_events ORDER BY seq").fetchall()
    from ledger.reading import parse_event

    parsed = [parse_event(r[0].encode(), 0) for r in rows]
    return [(e.key, e.kind, dict(e.data)) for e in parsed if e is not None]


def test_concurrent_jobs_of_one_host_run_once_each(url: str, tmp_path: Path) -> None:
    """20 concurrent callers over 4 slots: each gets its own job's state, each e-mail and
    payment once; running them all again performs nothing; the chain verifies."""
    steps = Orders(tmp_path, quiet)
    keys = [f"shop@order:o{n}" for n in range(1, 21)]

    async def main() -> list[Any]:
        with Host(steps, postgres=url, clock=clock, concurrency=4) as host:
            first = await asyncio.gather(*(host.run(k) for k in keys))
            again = await asyncio.gather(*(host.run(k) for k in keys))
            assert host.journal.verify() == []  # type: ignore[attr-defined]
            return [first, again]

    first, again = asyncio.run(main())
    for states in (first, again):
        assert [(s.state, s.disposition, s.keys) for s in states] == [
            ("finished", "done", [k]) for k in keys
        ]
    world = Counter(lines(tmp_path / "world.log"))
    assert sorted(world.values()) == [1] * 40
    assert len(lines(tmp_path / "tools.log")) == 20


def test_a_key_held_by_another_session_waits_then_runs_once(url: str, tmp_path: Path) -> None:
    """Single flight across processes: while another session holds the key's advisory
    lock, a job of that key does not run (HZM103 names the holder after lock_timeout);
    once it is free the job runs, once."""
    steps = Orders(tmp_path, quiet)
    key = "shop@order:o7"
    with connect(url) as other:
        other.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (key,))
        with Host(steps, postgres=url, clock=clock, lock_timeout=0.2) as host:
            with pytest.raises(MachineError) as held:
                asyncio.run(host.run(key))
            assert held.value.code == "HZM103"
            assert "server backend" in held.value.message
            assert not (tmp_path / "world.log").exists()
            other.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (key,))
            state = asyncio.run(host.run(key))
    assert state is not None and (state.state, state.disposition) == ("finished", "done")
    assert lines(tmp_path / "world.log") == ["shop@mail:o7", "shop@pay:o7 70"]


def test_refusals_are_coded(tmp_path: Path, server: Cluster) -> None:
    """Both a directory and postgres= (HZM102); the queue without postgres= (HZM104); a
    server that is not there (HZM100, nothing run)."""
    steps = Orders(tmp_path, quiet)
    with pytest.raises(MachineError) as both:
        Host(steps, tmp_path, postgres=server.url("postgres"), clock=clock)
    assert both.value.code == "HZM102"
    with pytest.raises(MachineError) as queue:
        Host(steps, clock=clock).enqueue("shop@order:o1")
    assert queue.value.code == "HZM104"
    gone = f"postgresql://postgres@127.0.0.1:{server.port}/no_such_database"
    with pytest.raises(MachineError) as down:
        asyncio.run(Host(steps, postgres=gone, clock=clock).run("shop@order:o1"))
    assert down.value.code == "HZM100" and "no_such_database" in down.value.message
    assert not (tmp_path / "world.log").exists()


BAD_EVENTS = [
    pytest.param(("Turn.Started", {}, None, None, ()), "HZL024", id="kind-uppercase"),
    pytest.param(("turn..started", {}, None, None, ()), "HZL024", id="kind-empty-part"),
    pytest.param((7, {}, None, None, ()), "HZL024", id="kind-not-a-string"),
    pytest.param(("turn.started", {}, "t\n1", None, ()), "HZL024", id="turn-two-lines"),
    pytest.param(("turn.started", {}, None, "k" * 201, ()), "HZL024", id="key-too-long"),
    pytest.param(("turn.started", {}, None, "ann@example.com", ()), "HZL021", id="key-email"),
    pytest.param(("step.done", {"text": "hi"}, "t1", None, ()), "HZL020", id="content-field"),
    pytest.param(("step.done", {"n": float("nan")}, "t1", None, ()), "HZL023", id="nan"),
    pytest.param(("step.done", {"s": "x" * 201}, "t1", None, ()), "HZL022", id="long-plain"),
    pytest.param(
        ("step.done", {f"f{n}": "x" * 200 for n in range(400)}, "t1", None, ()),
        "HZL025",
        id="line-too-large",
    ),
]


@pytest.mark.parametrize("bad, code", BAD_EVENTS)
@pytest.mark.parametrize("store", ["spine", "postgres"])
def test_the_same_bad_event_is_refused_alike_by_both_stores(
    store: str, bad: tuple[Any, ...], code: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The spine and the Postgres journal make one check before an append
    (`ledger.guard.checked_append`, then the line's size): the same bad event gets the same
    code from either, and nothing is written (the next good event is the first)."""
    from ledger.errors import LedgerError
    from ledger.spine import Spine
    from machines.stores.pg_journal import PostgresJournal
    from machines.stores.spine_journal import SpineJournal

    kind, data, turn, key, short_text = bad
    with contextlib.ExitStack() as stack:
        journal: Any
        if store == "spine":
            spine = stack.enter_context(Spine.open(tmp_path, clock=clock))
            journal = SpineJournal.open(spine)
        else:
            conn = stack.enter_context(connect(request.getfixturevalue("url")))
            journal = PostgresJournal(conn, clock)
        with pytest.raises(LedgerError) as refused:
            journal.append(kind, data, turn=turn, key=key, short_text=short_text)
        assert refused.value.code == code
        assert journal.append("turn.started", {}, turn="t1").seq == 1


def enqueue(url: str, root: Path, orders: range) -> None:
    host = Host(Orders(root, quiet), postgres=url, clock=clock)
    for n in orders:
        host.enqueue(f"shop@order:o{n}")
    host.close()


def start(
    url: str, root: Path, at: int | str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), url, str(root), str(at)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_any(running: list[subprocess.Popen[str]]) -> subprocess.Popen[str]:
    """The first of ``running`` to exit (blocking on their pidfds, no polling)."""
    fds = {os.pidfd_open(p.pid): p for p in running}
    try:
        ready, _, _ = select.select(list(fds), [], [])
        done = fds[ready[0]]
        done.wait()
        return done
    finally:
        for fd in fds:
            os.close(fd)


def wait_for(condition: Callable[[], bool], what: str) -> None:
    """Wait for ``condition`` (polled; a bound of 120 s only ends a test that would hang)."""
    for _ in range(2400):
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"waited 120 s for {what}")


def test_a_long_job_keeps_its_lease_until_its_worker_is_killed(url: str, tmp_path: Path) -> None:
    """A worker process runs a job whose step outlasts its lease (1 s of a clock the test
    moves): its heartbeat renews the lease, so another worker claims nothing while it
    lives. SIGKILLed, it renews nothing: once the clock passes its last lease the other
    worker claims the job and resumes it, its e-mail sent once."""
    key, start_at = "long@job:1", datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    (tmp_path / "clock").write_text(start_at.isoformat(), encoding="utf-8")
    other = Host(
        Long(tmp_path, block=False), postgres=url, clock=file_clock(tmp_path / "clock"), lease=1.0
    )
    other.enqueue(key)
    first = start(url, tmp_path, "long")
    try:
        assert first.stdout is not None and first.stdout.readline() == "entered\n"
        with connect(url) as conn:

            def lease() -> tuple[datetime, int]:
                row = conn.execute(
                    "SELECT lease_until, claims FROM hz_jobs WHERE key = %s", (key,)
                ).fetchone()
                return row[0], row[1]

            moved = start_at + timedelta(seconds=10)  # its first lease lapsed by this clock
            (tmp_path / "clock").write_text(moved.isoformat(), encoding="utf-8")
            wait_for(lambda: lease()[0] > moved, "the running worker to renew its lease")
            assert asyncio.run(other.work(until_empty=False)) == 0
            assert lease()[1] == 1  # claimed once: the other worker took nothing
            first.kill()
            first.wait()
            wait_for(lambda: key_holder(conn, key) == "nobody now", "the server to drop its lock")
            assert asyncio.run(other.work(until_empty=False)) == 0  # its last lease holds
            later = moved + timedelta(seconds=10)
            (tmp_path / "clock").write_text(later.isoformat(), encoding="utf-8")
            assert asyncio.run(other.work(until_empty=False)) == 1
            assert lease()[1] == 2
    finally:
        first.kill()
        first.communicate()
        other.close()
    assert lines(tmp_path / "world.log") == ["long@mail:1"]
    turns = Counter(kind for _, kind, _ in events(url) if kind.startswith("turn."))
    assert (turns["turn.started"], turns["turn.resumed"], turns["turn.finished"]) == (1, 1, 1)


def broken_promises(url: str, root: Path, orders: int) -> list[str]:
    """What went wrong for orders 1..``orders``: an e-mail or payment not performed exactly
    once, a page twice, a turn started or finished other than once, a job left undone, a
    break of the chain (none when every promise held)."""
    from machines.stores.pg_journal import PostgresJournal

    broken: list[str] = []
    world, pages = Counter(lines(root / "world.log")), Counter(lines(root / "tools.log"))
    for n in range(1, orders + 1):
        for line in (f"shop@mail:o{n}", f"shop@pay:o{n} {10 * n}"):
            if world[line] != 1:
                broken.append(f"{line}: performed {world[line]} times, intended once")
        if pages[f"page:o{n}"] > 1:
            broken.append(f"page:o{n} ran {pages[f'page:o{n}']} times")
    record = events(url)
    starts = Counter(key for key, kind, _ in record if kind == "turn.started")
    if sorted(starts.values()) != [1] * orders:
        broken.append(f"turns started per order: {Counter(starts.values())}")
    ends = [data for _, kind, data in record if kind == "turn.finished"]
    if len(ends) != orders or any(d.get("disposition") != "done" for d in ends):
        broken.append(f"{len(ends)} turns finished for {orders} orders: {ends[:3]}")
    with connect(url) as conn:
        left = conn.execute("SELECT count(*) FROM hz_jobs WHERE state <> 'done'").fetchone()
        chain = PostgresJournal(conn, clock).verify()
    if left[0] != 0:
        broken.append(f"{left[0]} jobs left undone")
    if chain:
        broken.append(f"the chain breaks: {chain[:3]}")
    return broken


@pytest.mark.kill
@pytest.mark.parametrize("kind", ["turn.started", "effect.started", "effect.done", "turn.finished"])
def test_a_worker_killed_mid_commit_loses_nothing(url: str, tmp_path: Path, kind: str) -> None:
    """Two worker processes on one database: while one is paused mid-job, the other dies
    between the INSERT and the COMMIT of its first ``kind`` line
    (``HZ_CRASH_AT=at:pg-commit:<kind>``, exit 137 as a SIGKILL). The row never lands, and
    the living worker finishes every job, the dead one's resumed after its lease: each
    e-mail and payment once, each turn started and finished once, the chain intact."""
    orders = 6
    enqueue(url, tmp_path, range(1, orders + 1))
    living = start(url, tmp_path, "pause:1")
    try:
        assert living.stdout is not None and living.stdout.readline() == "paused\n"
        dying = start(url, tmp_path, 0, {"HZ_CRASH_AT": f"at:pg-commit:{kind}"})
        _, err = dying.communicate(timeout=600)
        assert dying.returncode == 137, err
        _, err = living.communicate("go\n", timeout=600)
        assert living.returncode == 0, err
    finally:
        living.kill()
    assert broken_promises(url, tmp_path, orders) == []


def pg_ctl(server: Cluster, action: str) -> None:
    """``pg_ctl <action>`` on the module's server (fast: every connection is cut), waiting
    until it is done (a started server answers)."""
    options = f"-p {server.port} -c listen_addresses=127.0.0.1 -k {server.data.parent}"
    subprocess.run(
        [
            *server.run_as,
            str(server.bin / "pg_ctl"),
            "-D",
            str(server.data),
            "-l",
            str(server.data.parent / "server.log"),
            "-o",
            options,
            "-m",
            "fast",
            "-w",
            "-t",
            "120",
            action,
        ],
        check=True,
        capture_output=True,
    )


def restart(server: Cluster) -> None:
    pg_ctl(server, "restart")


class Cut(TypedSteps):
    """A job whose first gather runs ``during`` (the test cuts the server there), then
    mails once (probed through ``world.log``)."""

    def __init__(self, root: Path, during: Callable[[], None]) -> None:
        self.root, self.during, self.cut = root, during, False

    def recorded(self, key: str) -> bool:
        return key in lines(self.root / "world.log")

    @effect(probe=recorded, event="mail.sent")
    async def mail(self, key: str) -> None:
        with open(self.root / "world.log", "a", encoding="utf-8") as log:
            log.write(f"{key}\n")

    async def gather(self, ctx: TurnContext) -> dict[str, Any]:
        if not self.cut:
            self.cut = True
            self.during()
        return {"job": ctx.key.split(":")[1]}

    async def act(self, ctx: TurnContext, job: dict[str, Any]) -> Acted:
        await self.mail(f"cut@mail:{job['job']}")
        return Acted("done")


def test_a_run_that_loses_its_connection_is_coded_and_runs_again(
    server: Cluster, url: str, tmp_path: Path
) -> None:
    """The server restarts while ``run(key)``'s job is in its gather: the caller gets
    HZM105 with a hint, not psycopg's error; the next run reconnects and the key rule
    resumes the job, its e-mail sent once; ``enqueue`` connects again too."""
    steps = Cut(tmp_path, lambda: restart(server))
    with Host(steps, postgres=url, clock=clock) as host:
        host.enqueue("cut@job:8")
        with pytest.raises(MachineError) as cut:
            asyncio.run(host.run("cut@job:1"))
        assert cut.value.code == "HZM105" and "cut@job:1" in cut.value.message
        assert "run again" in cut.value.hint
        host.enqueue("cut@job:9")
        state = asyncio.run(host.run("cut@job:1"))
    assert state is not None and (state.state, state.disposition) == ("finished", "done")
    assert lines(tmp_path / "world.log") == ["cut@mail:1"]
    with connect(url) as conn:
        queued = conn.execute("SELECT key FROM hz_jobs ORDER BY key").fetchall()
    assert [row[0] for row in queued] == ["cut@job:8", "cut@job:9"]


def test_a_worker_whose_server_stays_down_stops_coded(
    server: Cluster, url: str, tmp_path: Path
) -> None:
    """The server stops while a worker's job runs and does not come back within the
    worker's ``lock_timeout``: ``work`` ends with HZM106 naming both errors and a hint,
    it does not hang; once the server is back another worker resumes the job after its
    lease (1 s of the wall clock), its e-mail sent once."""
    steps = Cut(tmp_path, lambda: pg_ctl(server, "stop"))
    host = Host(steps, postgres=url, clock=wall, lock_timeout=0.5, lease=1.0)
    try:
        host.enqueue("cut@job:2")
        with pytest.raises(MachineError) as down:
            asyncio.run(host.work())
    finally:
        host.close()
        pg_ctl(server, "start")
    assert down.value.code == "HZM106" and "lost" in down.value.message
    assert "start the worker again" in down.value.hint
    later = Host(Cut(tmp_path, lambda: None), postgres=url, clock=wall, lease=1.0)
    try:
        assert asyncio.run(later.work()) == 1
    finally:
        later.close()
    assert lines(tmp_path / "world.log") == ["cut@mail:2"]


@pytest.mark.kill
def test_a_server_restart_mid_run_loses_nothing(server: Cluster, url: str, tmp_path: Path) -> None:
    """Two worker processes, each paused mid-job (after a write to its world, so its next
    move is a query), while the server restarts (``pg_ctl restart -m fast``): each finds
    its connection gone, reconnects, makes its stopped job due again and goes on; both
    exit 0, each e-mail and payment once, each turn started and finished once."""
    orders = 12
    enqueue(url, tmp_path, range(1, orders + 1))
    workers = [start(url, tmp_path, "pause:2"), start(url, tmp_path, "pause:4")]
    try:
        for worker in workers:
            assert worker.stdout is not None and worker.stdout.readline() == "paused\n"
        restart(server)
        errors = [worker.communicate("go\n", timeout=600)[1] for worker in workers]
        assert [worker.returncode for worker in workers] == [0, 0], errors
    finally:
        for worker in workers:
            worker.kill()
    assert broken_promises(url, tmp_path, orders) == []


@pytest.mark.slow
@pytest.mark.kill
def test_a_kill_loop_over_four_workers_acts_exactly_once(url: str, tmp_path: Path) -> None:
    """4 workers drain the queue while each is SIGKILLed at a seeded point (an append made
    durable, or a world write) and replaced, until KILLS kills; batches of orders are
    queued as the queue empties. Then every order ended done once, its e-mail and its
    payment performed exactly once, its page at most once, no job left undone, the chain
    intact, and killed turns were resumed by other workers."""
    rng = random.Random(SEED)
    batch, queued = max(8, KILLS // 2), 0
    enqueue(url, tmp_path, range(1, batch + 1))
    queued = batch
    running = [start(url, tmp_path, rng.randint(1, 40)) for _ in range(WORKERS)]
    kills = runs = 0
    while running:
        done = wait_any(running)
        running.remove(done)
        runs += 1
        _out, err = done.communicate()
        if done.returncode == -9:
            kills += 1
        else:
            assert done.returncode == 0, err
        if done.returncode == -9 or kills < KILLS:
            if kills < KILLS and done.returncode == 0:  # the queue ran dry: another batch
                enqueue(url, tmp_path, range(queued + 1, queued + batch + 1))
                queued += batch
            at = rng.randint(1, 40) if kills < KILLS else 0
            running.append(start(url, tmp_path, at))
    broken: list[str] = []
    world = Counter(lines(tmp_path / "world.log"))
    pages = Counter(lines(tmp_path / "tools.log"))
    for n in range(1, queued + 1):
        for line in (f"shop@mail:o{n}", f"shop@pay:o{n} {10 * n}"):
            if world[line] != 1:
                broken.append(f"{line}: performed {world[line]} times, intended once")
        if pages[f"page:o{n}"] > 1:
            broken.append(f"page:o{n} ran {pages[f'page:o{n}']} times")
    if sum(world.values()) != 2 * queued:
        broken.append(f"world.log holds {sum(world.values())} lines for {queued} orders")
    record = events(url)
    starts = Counter(key for key, kind, _ in record if kind == "turn.started")
    ends = [data for _, kind, data in record if kind == "turn.finished"]
    resumed = sum(1 for _, kind, _ in record if kind == "turn.resumed")
    if len(ends) != queued or any(d.get("disposition") != "done" for d in ends):
        broken.append(f"{len(ends)} turns finished for {queued} orders: {ends[:3]}")
    if sorted(starts.values()) != [1] * queued:
        broken.append(f"turns started per order: {Counter(starts.values())}")
    with connect(url) as conn:
        left = conn.execute("SELECT count(*) FROM hz_jobs WHERE state <> 'done'").fetchone()
        from machines.stores.pg_journal import PostgresJournal

        chain = PostgresJournal(conn, clock).verify()
    if left[0] != 0:
        broken.append(f"{left[0]} jobs left undone")
    if chain:
        broken.append(f"the chain breaks: {chain[:3]}")
    assert broken == []
    assert kills >= KILLS and resumed >= 1
    interrupted = sum(1 for d in ends if d.get("paged") is False)
    print(
        f"postgres kill loop (seed {SEED}): {kills} SIGKILLs in {runs} worker runs, "
        f"{WORKERS} at once; {queued} orders: e-mails {queued}/{queued} once, payments "
        f"{queued}/{queued} once, pages {sum(pages.values())} (none twice, {interrupted} "
        f"INTERRUPTED); {resumed} turns resumed; 0 jobs lost; the chain verifies"
    )


def test_the_docs_worker_runs_as_three_processes_on_one_database(url: str, tmp_path: Path) -> None:
    """The worker of docs/embedding.md ("Many machines on Postgres"), as written, run by
    three processes at once on one database: each invoice mailed once, no job left."""
    doc = (ROOT / "docs" / "embedding.md").read_text(encoding="utf-8")
    (snippet,) = [s for s in re.findall(r"```python\n(.*?)```", doc, re.S) if "postgres=" in s]
    script = tmp_path / "worker.py"
    script.write_text(snippet, encoding="utf-8")
    spool = tmp_path / "spool"
    spool.mkdir()
    env = {**os.environ, "HZ_POSTGRES_URL": url, "HZ_SPOOL": str(spool)}
    workers = [
        subprocess.Popen(
            [sys.executable, str(script)],
            cwd=tmp_path,
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(3)
    ]
    outputs = [w.communicate() for w in workers]
    assert [w.returncode for w in workers] == [0, 0, 0], [err for _, err in outputs]
    sent = (spool / "sent.log").read_text().splitlines()
    assert sorted(sent) == sorted(f"billing@mail:{n}" for n in range(10))  # each once
    with connect(url) as conn:
        left = conn.execute("SELECT count(*) FROM hz_jobs WHERE state <> 'done'").fetchone()
    assert left[0] == 0
