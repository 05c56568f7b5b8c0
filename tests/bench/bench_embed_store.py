"""An embedded host's store: a no-op restart over many finished jobs, and the fsyncs
of one durable step.

No-op restart: a host journal with 10,000 finished jobs (each the lines of a real
finished turn, copied with its own turn id and keys), then what a host does at start
(docs/embedding.md): open the spine, open the journal (one scan builds its index), and
offer every job again through the key rule; nothing is to run. The baseline, in the
same run, is the key rule that reads each key's turn from the spine, over the oldest
jobs only (it reads from each turn's start to the spine's end), scaled to all of them.

No-op restart through `Host.run`: a `Host` spine of 400 and of 10,000 finished jobs
(each the lines of a real finished `Host` job), then a process that opens a `Host` over it
and awaits ``host.run(key)`` for every job; nothing is to run, and each finished job is
answered from the index without reading its turn. Its CPU against ``python -c pass``'s
(target: at most 15x for 400 jobs), and for 10,000 the CPU seconds of the runs once the
Host is open (target: under 1 s beyond start-up; the open's scan is start-up, measured
above as the key rule's no-op restart, and printed too). The baseline, in the same run,
folds each job's turn from the spine as `Host.run` did before (400 jobs).

Embedded step fsyncs: a process opens a spine, its journal and a `DiskBody` as
docs/embedding.md says (``DiskBody(directory, spine=spine)``) and runs one turn of N
replay-safe tool calls, under ``strace -f -e trace=fsync,fdatasync -c`` (every thread,
so the body's directory fsync on `ledger.fsyncs`' worker counts too); a step's fsyncs
are (turn of 20 steps - turn of 0) / 20. The baseline, in the same run, is the body
that fsyncs each record (``DiskBody(directory)``, what the guide said before).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ledger.event import Event
from ledger.spine import Spine
from machines.core.resume import Pins, start_turn
from machines.core.runner import Settings
from machines.crashkit.testing import FakeWorld, ManualClock, RecordingSleep, ScriptedSteps
from machines.keys import Wake, coalesce
from machines.stores.journal import InMemoryBody, InMemoryJournal
from machines.stores.spine_journal import SpineJournal

JOBS = 10_000
BASELINE_JOBS = 20
MARK = "TEMPLATE"


def _template() -> list[Event]:
    """The lines of one real finished turn (a model request, a replay-safe tool call, a
    draft placed), with ``TEMPLATE`` where the job's own id goes."""
    from machines.core.tools import ToolDecl

    clock = ManualClock()
    journal = InMemoryJournal(clock)
    steps = ScriptedSteps(FakeWorld(), owner=f"bot{MARK}", tools=[ToolDecl("count", True)])
    asyncio.run(
        start_turn(
            journal,
            InMemoryBody(),
            steps,
            Settings(clock=clock, sleep=RecordingSleep()),
            turn=f"turn-{MARK}",
            wakes=[Wake("asked", f"bot{MARK}@job")],
            pins=Pins(1),
        )
    )
    return list(journal.events)


def _fill(directory: Path, jobs: int) -> int:
    """A spine of ``jobs`` finished jobs (written with one write at the end); its lines."""
    template = _template()
    kinds = {e.kind for e in template}
    with Spine.open(directory, clock=ManualClock()) as spine:
        spine.defer(kinds)
        for n in range(jobs):
            job = f"{n:05d}"
            for e in template:
                data = json.loads(json.dumps(e.data).replace(MARK, job))
                turn = e.turn.replace(MARK, job) if e.turn else None
                key = e.key.replace(MARK, job) if e.key else None
                spine.append(e.kind, data, turn=turn, key=key)
        spine.sync()
        return spine.last.seq if spine.last else 0


class _ReadingJournal:
    """A journal that answers the key rule's "has this turn ended?" by reading the turn's
    lines from the spine (what the rule did before the index knew turn ends)."""

    def __init__(self, journal: SpineJournal) -> None:
        self.journal = journal

    def key_events(self, key: str) -> list[Event]:
        return self.journal.key_events(key)

    def turn_events(self, turn: str) -> list[Event]:
        return self.journal.turn_events(turn)


def _wakes(jobs: int) -> list[Wake]:
    return [Wake("asked", f"bot{n:05d}@job") for n in range(jobs)]


def no_op_restart(directory: Path, jobs: int) -> tuple[float, float, float]:
    """Seconds for the restart (open, scan, the key rule over every job), of those the
    key rule's, and the CPU seconds of the whole."""
    cpu, start = time.process_time(), time.perf_counter()
    with Spine.open(directory, clock=ManualClock()) as spine:
        journal = SpineJournal.open(spine)
        ruled = time.perf_counter()
        plan = coalesce(journal, _wakes(jobs))
        end = time.perf_counter()
    cpu = time.process_time() - cpu
    assert not plan.resume and not plan.start, plan
    return end - start, end - ruled, cpu


def old_rule(directory: Path, jobs: int) -> float:
    """Seconds for the key rule that reads each turn, over the ``jobs`` oldest jobs."""
    with Spine.open(directory, clock=ManualClock()) as spine:
        journal = _ReadingJournal(SpineJournal.open(spine))
        start = time.perf_counter()
        plan = coalesce(journal, _wakes(jobs))  # type: ignore[arg-type]
        took = time.perf_counter() - start
    assert not plan.resume and not plan.start, plan
    return took


def restart_main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        lines = _fill(directory, JOBS)
        best = min(no_op_restart(directory, JOBS) for _ in range(5))
        old = old_rule(directory, BASELINE_JOBS)
    took, rule, cpu = best
    scaled = old * JOBS / BASELINE_JOBS
    print(f"spine: {JOBS:,} finished jobs, {lines:,} lines")
    print(
        f"baseline (key rule reading each turn, {BASELINE_JOBS} oldest jobs): {old:.2f} s, "
        f"about {scaled:.0f} s scaled to {JOBS:,}"
    )
    load = os.getloadavg()[0]
    print(
        f"no-op restart: {took:.3f} s (key rule {rule:.3f} s, open and scan the rest; "
        f"{cpu:.3f} s of CPU; load average {load:.1f} on {os.cpu_count()} CPUs)"
    )
    verdict = "PASS" if took < 1.0 else "MISS"
    print(f"{verdict} no-op restart over 10,000 jobs: {took:.2f} s (target < 1 s)")


HOST_JOBS = (400, 10_000)
HOST_MARK = "HOSTJOB"


class _Refusing:
    """Steps that must not run: a no-op restart runs none."""

    async def gather(self, ctx: object) -> None:
        raise AssertionError("a finished job ran again")


def _host_template() -> list[Event]:
    """The lines of one real finished `Host` job (a replay-safe tool, a probed e-mail),
    with ``HOSTJOB`` where the job's own id goes."""
    from machines import Acted, Host, TurnContext, effect, tool

    class Job:
        def sent(self, key: str) -> bool:
            return False

        @tool(replay_safe=True)
        async def look(self, job: str) -> str:
            return job

        @effect(probe=sent, event="mail.sent")
        async def mail(self, key: str) -> None:
            return None

        async def gather(self, ctx: TurnContext) -> dict[str, str]:
            return {"job": await self.look(ctx.key)}

        async def think(self, ctx: TurnContext, value: dict[str, str]) -> dict[str, str]:
            return value

        async def outcome(self, ctx: TurnContext, value: dict[str, str]) -> dict[str, str]:
            return value

        async def act(self, ctx: TurnContext, value: dict[str, str]) -> Acted:
            await self.mail(f"bot@mail:{HOST_MARK}")
            return Acted("done")

    host = Host(Job(), clock=ManualClock())
    asyncio.run(host.run(f"bot@job:{HOST_MARK}"))
    return list(host.journal.events)  # type: ignore[attr-defined]


def _host_fill(directory: Path, jobs: int) -> None:
    template = _host_template()
    with Spine.open(directory, clock=ManualClock()) as spine:
        spine.defer({e.kind for e in template})
        for n in range(jobs):
            job = f"{n:05d}"
            for e in template:
                data = json.loads(json.dumps(e.data).replace(HOST_MARK, job))
                turn = e.turn.replace("turn-", f"turn-{job}") if e.turn else None
                key = e.key.replace(HOST_MARK, job) if e.key else None
                spine.append(e.kind, data, turn=turn, key=key)
        spine.sync()


def host_restart(directory: Path, jobs: int, fold_each: bool) -> None:
    """In the child: a Host over ``directory``, ``run`` for every job (none runs); prints
    the seconds (wall and CPU) of its open (the spine's scan) and of the runs after it."""
    from machines import Host
    from machines.core.fold import fold

    async def main() -> dict[str, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        with Host(_Refusing(), directory, clock=ManualClock()) as host:
            opened, opened_cpu = time.perf_counter(), time.process_time()
            for n in range(jobs):
                state = await host.run(f"bot@job:{n:05d}")
                assert state is not None and state.disposition == "done", state
                if fold_each:  # what Host.run did before: read the turn from the spine
                    fold(state.turn, host.journal.turn_events(state.turn), host.vocabulary)
            ran, ran_cpu = time.perf_counter(), time.process_time()
        return {
            "open": opened - wall,
            "open_cpu": opened_cpu - cpu,
            "runs": ran - opened,
            "runs_cpu": ran_cpu - opened_cpu,
        }

    print(json.dumps(asyncio.run(main())))


def _child_cpu(command: list[str]) -> tuple[float, str]:
    """The CPU seconds (user and system) of one child process running ``command``."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, done.stdout


def host_restart_main() -> None:
    floor = min(_child_cpu([sys.executable, "-c", "pass"])[0] for _ in range(5))
    print(f"python -c pass: {floor:.3f} s of CPU")
    for jobs in HOST_JOBS:
        with tempfile.TemporaryDirectory() as tmp:
            directory = Path(tmp)
            _host_fill(directory, jobs)
            child = [sys.executable, __file__, "host-restart", str(directory), str(jobs)]
            runs = [_child_cpu(child) for _ in range(3)]
            cpu = min(c for c, _ in runs)
            inside = min((json.loads(out) for _, out in runs), key=lambda r: r["runs_cpu"])
            if jobs == HOST_JOBS[0]:
                old, _ = _child_cpu([*child, "fold"])
                print(
                    f"baseline (each finished job's turn folded from the spine, {jobs} jobs): "
                    f"{old:.2f} s of CPU, {old / floor:.0f}x python -c pass"
                )
        ratio = cpu / floor
        print(
            f"no-op restart through Host.run, {jobs:,} finished jobs: {cpu:.2f} s of CPU "
            f"({ratio:.1f}x python -c pass); the Host's open (its scan) {inside['open']:.3f} s "
            f"({inside['open_cpu']:.3f} s CPU), the runs after it {inside['runs']:.3f} s "
            f"({inside['runs_cpu']:.3f} s CPU; load average {os.getloadavg()[0]:.1f})"
        )
        if jobs == 400:
            verdict = "PASS" if ratio <= 15 else "MISS"
            print(f"{verdict} Host.run no-op restart over 400 jobs: {ratio:.1f}x (target 15x)")
        else:
            figure = inside["runs_cpu"]
            verdict = "PASS" if figure < 1.0 else "MISS"
            print(
                f"{verdict} Host.run no-op restart over 10,000 jobs beyond start-up "
                f"(the runs after the open, CPU): {figure:.2f} s (target < 1 s)"
            )


STEPS = 20


def one_turn(directory: Path, steps: int, lazy: bool) -> None:
    """One turn of ``steps`` replay-safe calls on a fresh spine in ``directory`` (run in
    the process strace watches)."""
    from machines import DiskBody
    from machines.core.tools import ToolDecl

    clock = ManualClock()
    tools = [ToolDecl(f"tool{i}", True) for i in range(steps)]
    script = ScriptedSteps(FakeWorld(), owner="bot", tools=tools, model_calls=0)
    with Spine.open(directory, clock=clock) as spine:
        journal = SpineJournal.open(spine)
        body = DiskBody(directory, spine=spine) if lazy else DiskBody(directory)
        asyncio.run(
            start_turn(
                journal,
                body,
                script,
                Settings(clock=clock, sleep=RecordingSleep()),
                turn="turn-1",
                wakes=[Wake("asked", "bot@job")],
                pins=Pins(1),
            )
        )
        body.close()


def fsyncs(steps: int, lazy: bool) -> int:
    """fsync and fdatasync calls of a process that runs `one_turn`, counted by strace."""
    with tempfile.TemporaryDirectory() as tmp:
        summary = Path(tmp) / "strace.txt"
        command = [sys.executable, __file__, "turn", str(Path(tmp) / "spine"), str(steps)]
        command.append("lazy" if lazy else "plain")
        strace = ["strace", "-f", "-e", "trace=fsync,fdatasync", "-c", "-o", str(summary)]
        subprocess.run([*strace, *command], check=True, capture_output=True)
        table = summary.read_text()
    return sum(
        int(match.group(1))
        for match in re.finditer(
            r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?f(?:data)?sync$", table, re.M
        )
    )


def fsync_main() -> None:
    if shutil.which("strace") is None:
        print("MISS embedded step fsyncs: strace is not installed (target 1)")
        return
    per_step = {lazy: (fsyncs(STEPS, lazy) - fsyncs(0, lazy)) / STEPS for lazy in (False, True)}
    print(f"baseline (DiskBody fsyncing each record): {per_step[False]:g} fsyncs per step")
    figure = per_step[True]
    verdict = "PASS" if figure <= 1 else "MISS"
    print(f"{verdict} embedded step fsyncs: {figure:g} (target 1)")


def main() -> None:
    restart_main()
    host_restart_main()
    fsync_main()


if __name__ == "__main__":
    if sys.argv[1:2] == ["turn"]:
        one_turn(Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "lazy")
    elif sys.argv[1:2] == ["host-restart"]:
        host_restart(Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4:5] == ["fold"])
    elif sys.argv[1:2] == ["host"]:
        host_restart_main()
    elif sys.argv[1:2] == ["fsyncs"]:
        fsync_main()
    else:
        main()
