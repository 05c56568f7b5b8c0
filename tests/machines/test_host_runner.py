"""A `Host` as a runner's object (issue 40, item 1): many concurrent callers, tasks and
threads, on one Host over a spine on disk; each gets its own job's state, each e-mail is
sent once, one key runs once, distinct keys at most ``concurrency`` at a time, and a wait
for the spine's lock is awaited, never blocking the event loop."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from ledger.errors import LedgerError
from ledger.reading import read_events
from machines import Acted, Host, TurnContext, TypedSteps, effect
from machines.errors import MachineError

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def clock() -> datetime:
    return NOW


class Job(BaseModel):
    job: str


class Mailer(TypedSteps):
    """One job: gather yields to the loop (so concurrent jobs interleave), act mails once.

    ``gate``: when set, gather waits for it after counting itself among the running, so a
    test can see how many jobs run at once."""

    def __init__(self, gate: asyncio.Event | None = None) -> None:
        self.sent: list[str] = []
        self.sent_lock = threading.Lock()
        self.running = 0
        self.most = 0
        self.gate = gate
        self.threads: set[str] = set()

    def mailed(self, key: str) -> bool:
        return key in self.sent

    @effect(probe=mailed, event="mail.sent")
    async def mail(self, key: str) -> None:
        with self.sent_lock:
            self.sent.append(key)

    async def gather(self, ctx: TurnContext) -> Job:
        self.threads.add(threading.current_thread().name)
        self.running += 1
        self.most = max(self.most, self.running)
        try:
            if self.gate is not None:
                await self.gate.wait()
            for _ in range(3):
                await asyncio.sleep(0)
        finally:
            self.running -= 1
        return Job(job=ctx.key.split(":")[1])

    async def act(self, ctx: TurnContext, job: Job) -> Acted:
        await self.mail(f"bot@mail:{job.job}")
        return Acted("done", {"job": job.job})


def started(spine: Path) -> Counter[str]:
    """How many turns each key started on the spine."""
    return Counter(str(e.key) for e in read_events(spine) if e.kind == "turn.started")


def test_fifty_concurrent_tasks_each_get_their_own_job(tmp_path: Path) -> None:
    """50 tasks gathered on one Host: each state is its own job's, finished; each e-mail
    once; each key one turn. (Before: the first caller's turn ran, the others got its
    state back and their jobs were only requested.)"""
    steps = Mailer()
    keys = [f"bot@job:{n:02d}" for n in range(50)]

    async def main() -> list[Any]:
        with Host(steps, tmp_path, clock=clock, concurrency=8) as host:
            return await asyncio.gather(*(host.run(key) for key in keys))

    states = asyncio.run(main())
    assert [s.keys for s in states] == [[key] for key in keys]
    assert {(s.state, s.disposition) for s in states} == {("finished", "done")}
    assert sorted(steps.sent) == sorted(f"bot@mail:{n:02d}" for n in range(50))
    assert started(tmp_path / "session.jsonl") == Counter(keys)
    assert 1 < steps.most <= 8


def test_distinct_keys_run_at_once_up_to_the_bound(tmp_path: Path) -> None:
    """concurrency=4 over 12 jobs whose gather waits for a gate: exactly 4 are in gather
    together, never a fifth, and all finish once the gate opens."""

    async def main() -> tuple[int, list[Any]]:
        gate = asyncio.Event()
        steps = Mailer(gate)
        with Host(steps, tmp_path, clock=clock, concurrency=4) as host:
            runs = [asyncio.ensure_future(host.run(f"bot@job:{n}")) for n in range(12)]
            while steps.running < 4:
                await asyncio.sleep(0)
            for _ in range(50):  # a fifth would have started by now if it could
                await asyncio.sleep(0)
            at_once = steps.running
            gate.set()
            return at_once, await asyncio.gather(*runs)

    at_once, states = asyncio.run(main())
    assert at_once == 4
    assert [s.state for s in states] == ["finished"] * 12


def test_one_key_runs_once_and_a_second_caller_gets_its_result(tmp_path: Path) -> None:
    """Two callers of one key at once: one turn, one e-mail, both get that turn's state."""
    steps = Mailer()

    async def main() -> list[Any]:
        with Host(steps, tmp_path, clock=clock, concurrency=4) as host:
            return await asyncio.gather(host.run("bot@job:1"), host.run("bot@job:1"))

    first, second = asyncio.run(main())
    assert first is second and first.state == "finished"
    assert steps.sent == ["bot@mail:1"]
    assert started(tmp_path / "session.jsonl") == Counter({"bot@job:1": 1})


def test_threads_and_tasks_share_one_host_and_one_open_of_the_journal(tmp_path: Path) -> None:
    """25 threads calling run_sync and 25 tasks on a loop of the main thread, at once, on
    one Host: 50 own jobs finished, each e-mail once, the spine opened once."""
    steps = Mailer()
    host = Host(steps, tmp_path, clock=clock, concurrency=8)
    opened: list[Any] = []
    take = host._opened
    host._opened = lambda spine: (opened.append(spine), take(spine))[1]  # type: ignore[method-assign]
    results: dict[str, Any] = {}
    go = threading.Barrier(26)

    def worker(key: str) -> None:
        go.wait()
        results[key] = host.run_sync(key)

    threads = [threading.Thread(target=worker, args=(f"bot@job:thread{n:02d}",)) for n in range(25)]
    for thread in threads:
        thread.start()

    async def tasks() -> list[Any]:
        go.wait()
        return await asyncio.gather(*(host.run(f"bot@job:task{n:02d}") for n in range(25)))

    for n, state in enumerate(asyncio.run(tasks())):
        results[f"bot@job:task{n:02d}"] = state
    for thread in threads:
        thread.join()
    host.close()
    assert len(results) == 50
    assert all(s.keys == [key] and s.state == "finished" for key, s in results.items())
    assert Counter(steps.sent) == Counter(f"bot@mail:{k.split(':')[1]}" for k in results)
    assert len(opened) == 1
    assert max(started(tmp_path / "session.jsonl").values()) == 1


def test_run_sync_inside_a_running_loop_is_hzm091(tmp_path: Path) -> None:
    """run_sync in a coroutine would block its own loop: refused, coded, nothing run."""
    steps = Mailer()
    host = Host(steps, tmp_path, clock=clock)

    async def main() -> None:
        host.run_sync("bot@job:1")

    with pytest.raises(MachineError) as caught:
        asyncio.run(main())
    assert caught.value.code == "HZM091"
    assert "await host.run" in caught.value.hint
    assert steps.sent == []


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_a_concurrency_below_one_or_not_whole_is_hzm090(tmp_path: Path, bad: Any) -> None:
    with pytest.raises(MachineError) as caught:
        Host(Mailer(), tmp_path, clock=clock, concurrency=bad)
    assert caught.value.code == "HZM090"


HOLDER = """
import sys
from datetime import UTC, datetime
from ledger.spine import Spine
spine = Spine.open(sys.argv[1], clock=lambda: datetime.now(UTC))
print("held", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def holder(tmp_path: Path) -> Any:
    """Another process holding the spine in ``tmp_path`` until its stdin closes."""
    script = tmp_path / "holder.py"
    script.write_text(HOLDER, encoding="utf-8")
    root = Path(__file__).resolve().parents[2]
    process = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path / "spine")],
        cwd=root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdout.readline() == "held\n"
    yield process
    if process.poll() is None:
        assert process.stdin is not None
        process.stdin.close()
        process.wait()
    process.stdout.close()


def test_waiting_for_the_spines_lock_does_not_block_the_loop(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    """While another process holds the spine, run waits for it awaited: the loop runs
    other work meanwhile, and the job runs once the holder lets go."""
    steps = Mailer()

    async def main() -> Any:
        host = Host(steps, tmp_path / "spine", clock=clock, lock_timeout=120)
        job = asyncio.ensure_future(host.run("bot@job:1"))
        for _ in range(20):
            await asyncio.sleep(0)  # the loop is ours while the job waits for the lock
        waiting = not job.done()
        assert holder.stdin is not None
        holder.stdin.close()
        state = await job
        host.close()
        return waiting, state

    waiting, state = asyncio.run(main())
    assert waiting and state.state == "finished"
    assert steps.sent == ["bot@mail:1"]


def test_a_lock_not_had_in_time_is_hzl010_naming_its_holder(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    """lock_timeout=0 against a spine another process holds: HZL010 with its pid."""
    steps = Mailer()
    host = Host(steps, tmp_path / "spine", clock=clock, lock_timeout=0)
    with pytest.raises(LedgerError) as caught:
        asyncio.run(host.run("bot@job:1"))
    assert caught.value.code == "HZL010"
    assert f"process {holder.pid} (" in caught.value.message
    assert steps.sent == []


def test_a_finished_job_is_answered_from_the_index_without_reading_the_spine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A restart over finished jobs reads no turn from the spine: the state (finished,
    done, its keys, cause and pins) comes from the index the open built."""
    with Host(Mailer(), tmp_path, clock=clock) as host:
        first = asyncio.run(host.run("bot@job:1"))
    steps = Mailer()
    with Host(steps, tmp_path, clock=clock) as host:
        host.open()
        read: list[str] = []
        turn_events = host.journal.turn_events
        monkeypatch.setattr(host.journal, "turn_events", lambda t: read.append(t) or turn_events(t))
        again = asyncio.run(host.run("bot@job:1"))
    assert read == [] and steps.sent == []
    assert again is not None and first is not None
    for name in ("turn", "state", "disposition", "cause", "keys", "pins", "reason", "error"):
        assert getattr(again, name) == getattr(first, name), name


def test_threads_each_with_their_own_loop_share_one_host(tmp_path: Path) -> None:
    """12 threads, each asyncio.run(host.run(key)) on a loop of its own: a loop waits
    while another runs the host's turns; every job finished, each e-mail once."""
    steps = Mailer()
    host = Host(steps, tmp_path, clock=clock, concurrency=4)
    results: dict[str, Any] = {}
    go = threading.Barrier(12)

    def worker(key: str) -> None:
        go.wait()
        results[key] = asyncio.run(host.run(key))

    keys = [f"bot@job:own{n:02d}" for n in range(12)]
    threads = [threading.Thread(target=worker, args=(key,)) for key in keys]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    host.close()
    assert {key: (s.keys, s.state) for key, s in results.items()} == {
        key: ([key], "finished") for key in keys
    }
    assert sorted(steps.sent) == sorted(f"bot@mail:own{n:02d}" for n in range(12))
