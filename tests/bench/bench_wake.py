"""A person's `hz heinzel wake`: its CPU against ``python -c pass``, and its fsyncs.

1. A drafted wake as a whole process, on the built-in ``offline`` model and on a loopback
   OpenAI server (`tests/models/fake_providers.py`, the real client), each as a ratio of
   CPU time (the child's own rusage, median of several, interleaved with ``python -c
   pass`` in the same run). Beside each, the share of the process that is imports
   (``python -X importtime``: the sum of every module's own time against the same
   process's wall time). The whole wake is a figure, not a target: most of it is its floor.

   Every model step runs through pydantic-ai (the offline model too: it stands in for a
   real provider), so no wake costs less than importing the pydantic-ai model it runs
   on: its floor. The same rounds measure the floors as processes of their own, imported
   as hz imports them (the collector paused, `machines.loading`):
   ``import pydantic_ai.models.function`` for the offline wake (the offline model is a
   pydantic-ai ``FunctionModel``), ``import pydantic_ai.models.openai`` (pydantic-ai and
   the official ``openai`` client) for the OpenAI one; ``import pydantic_ai`` and
   ``import openai`` alone are printed beside them. Each wake's CPU beyond its floor is
   hz's share: the turn itself (pydantic-ai's run included), the spine and the index,
   hz's own imports. Its target is issue 42's: at most 4x ``python -c pass``, for both
   wakes. Where valgrind is on the machine, the same floors, wakes and shares are also
   counted in instructions executed (cachegrind, one run each, `bench_tick.instructions`),
   which other work on the machine does not move; their shares have the same target.
2. A drafted wake the resident daemon runs (`hz system daemon run`, issue 42 item 2):
   the tick that wakes ``report-0`` at its slot, in a process forked from one that
   imported hz and pydantic-ai once (`heinzel.tick.resident`, the daemon's own
   ``in_child`` and ``daemon_tick``), beside the same tick as a fresh
   ``hz system daemon tick`` process. The turn's own work is the same tick run again in
   an already warm process (no fork); what the daemon's wake costs beyond it (the fork,
   the home opened afresh, what the preload left to import) is its share. Target: at
   most 3x ``python -c pass``.
3. The fsyncs of a drafted wake by strace: the first wake in a home whose Heinzelmännchen
   has never run (nothing staged yet: target 10) and a later one (target 8).

Each round runs in a fresh copy of the home, so every wake drafts the same turn.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from heinzel.logs import configure_logging
from tests.bench.bench_tick import instructions, strace_calls
from tests.models.fake_providers import Call, Outcome, Provider
from tests.tick.homes import CREATED, HZ, make_home

ROUNDS = 7
FRIDAY = "2026-11-06T17:00:00Z"
LATER = "2026-11-06T18:00:00Z"
DONE = (
    "every pull request merged this week appears in exactly one bullet",
    "every issue that moved to Done this week is covered",
    "the section has at most eight bullets",
)
OUTCOME = {
    "report": "drafted the section",
    "draft": {
        "text": "## report-0\n\n- Express checkout: address autofill (#409)\n",
        "output": "section",
        "contract_version": 1,
        "done_when": [{"item": item, "met": True, "note": "checked"} for item in DONE],
    },
}
_IMPORT = re.compile(r"^import time:\s+(\d+) \|")


def script(body: dict[str, Any], n: int) -> Any:
    """One tool call (``report``), then the outcome, for every turn."""
    last = body["messages"][-1]
    if last.get("role") == "tool":
        return Outcome(OUTCOME)
    return Call("report", {"verb": "read", "target": "inputs", "description": "read them"})


def run(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, str]:
    """CPU seconds and wall seconds of one child process, and its stderr."""
    import time

    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        text = err.read().decode("utf-8", "replace")
    assert child.returncode == 0, (argv, text[-600:])
    return usage.ru_utime + usage.ru_stime, wall, text


def verdict(name: str, figure: float, target: float, text: str, unit: str = "x") -> None:
    word = "PASS" if figure <= target else "MISS"
    print(f"{word} {name}: {text} (target {target:g}{unit})")


def homes(base: Path) -> Path:
    """The worked example's home with one approved Heinzelmännchen, ``report-0``."""
    configure_logging("cli", stream=sys.stderr, clock=lambda: CREATED, level="warning")
    root, _ = make_home(base, 1)
    return root


def fresh(template: Path, to: Path) -> Path:
    shutil.rmtree(to, ignore_errors=True)
    shutil.copytree(template, to, symlinks=True)
    return to


def wake_env(root: Path, now: str, **extra: str) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(root),
        "HZ_HOME": str(root / "home"),
        "HZ_FIXTURE_SOURCES": str(root),
        "HZ_NOW": now,
        **extra,
    } | _pythonpath()


def _pythonpath() -> dict[str, str]:
    """``PYTHONPATH=<another checkout>`` runs that checkout's code (an older commit's figures)."""
    return {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}


SHARE = 4
"""hz's share of a wake, beyond its floor, as a ratio to ``python -c pass`` (module doc)."""
PAUSED = "import gc; gc.disable(); import {}"
"""A floor imported as hz imports it: the collector paused (`machines.loading`)."""
FLOORS = {
    name: PAUSED.format(name)
    for name in (
        "pydantic_ai",
        "pydantic_ai.models.function",
        "pydantic_ai.models.openai",
        "openai",
    )
}


def startup(template: Path, base: Path, provider: Provider) -> None:
    """Item 1 of the module's list."""
    work = base / "round" / "priya"
    online = {
        "HZ_MODEL": "openai-chat:gpt-4o-mini",
        "HZ_BASE_URL": provider.base_url,
        "OPENAI_API_KEY": "sk-bench",
    }
    wake = [HZ, "heinzel", "wake", "report-0"]
    cases: dict[str, tuple[dict[str, str], str]] = {
        "offline": ({}, "pydantic_ai.models.function"),
        "OpenAI (loopback)": (online, "pydantic_ai.models.openai"),
    }
    bare: list[float] = []
    floors: dict[str, list[float]] = {name: [] for name in FLOORS}
    cpu: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(ROUNDS):
        bare.append(run([sys.executable, "-c", "pass"], wake_env(base, FRIDAY), base)[0])
        for name, code in FLOORS.items():
            floors[name].append(run([sys.executable, "-c", code], wake_env(base, FRIDAY), base)[0])
        for name, (extra, _) in cases.items():
            fresh(template, work)
            cpu[name].append(run(wake, wake_env(work, FRIDAY, **extra), work)[0])
    floor = statistics.median(bare)
    print(f"python -c pass (baseline): {floor * 1000:7.1f} ms CPU")
    least = {name: statistics.median(taken) for name, taken in floors.items()}
    for name, took in least.items():
        print(f"floor: import {name}: {took / floor:.1f}x ({took * 1000:.0f} ms CPU)")
    for name, (extra, under) in cases.items():
        took = statistics.median(cpu[name])
        share = imports_share(template, work, extra)
        print(
            f"drafted hz heinzel wake, {name}: {took / floor:.1f}x ({took * 1000:.0f} ms CPU; "
            f"imports {share:.0%} of it; floor import {under} {least[under] / floor:.1f}x)"
        )
        beyond = took - least[under]
        verdict(
            f"hz's share of a drafted wake, {name} (beyond import {under}), CPU",
            beyond / floor,
            SHARE,
            f"{beyond / floor:.1f}x ({beyond * 1000:.0f} ms CPU)",
        )
    if shutil.which("valgrind") is None:
        print("instructions: valgrind is not installed (CPU ratios above only)")
        return
    counted = instructions([sys.executable, "-c", "pass"], wake_env(base, FRIDAY))
    print(f"python -c pass (baseline): {counted / 1e6:7.0f} M instructions")
    for name, (extra, under) in cases.items():
        below = instructions([sys.executable, "-c", FLOORS[under]], wake_env(base, FRIDAY))
        fresh(template, work)
        whole = instructions(wake, wake_env(work, FRIDAY, **extra))
        print(
            f"drafted hz heinzel wake, {name}: {whole / counted:.1f}x ({whole / 1e6:.0f} M; "
            f"floor import {under} {below / counted:.1f}x, {below / 1e6:.0f} M)"
        )
        verdict(
            f"hz's share of a drafted wake, {name} (beyond import {under}), instructions",
            (whole - below) / counted,
            SHARE,
            f"{(whole - below) / counted:.1f}x ({(whole - below) / 1e6:.0f} M)",
        )


def imports_share(template: Path, work: Path, extra: dict[str, str]) -> float:
    """The share of one wake's wall time spent importing (``-X importtime``)."""
    fresh(template, work)
    argv = [sys.executable, "-X", "importtime", "-m", "heinzel", "heinzel", "wake", "report-0"]
    _, wall, err = run(argv, wake_env(work, FRIDAY, **extra), work)
    own = sum(int(m.group(1)) for line in err.splitlines() if (m := _IMPORT.match(line)))
    return own / 1e6 / wall


RESIDENT = 3
"""A daemon's wake beyond the turn's own work, as a ratio to ``python -c pass``."""


def resident(template: Path, base: Path) -> None:
    """Item 2 of the module's list (run last: it imports hz into this process)."""
    import resource
    import time

    from heinzel.cli.verbs import daemon_tick
    from heinzel.tick.resident import in_child, preload

    work = base / "resident" / "priya"
    document = template / "report-0.md"  # the home names it by its absolute path
    pristine = document.read_bytes()
    said = base / "resident-out.txt"

    def round_home() -> None:
        document.write_bytes(pristine)
        fresh(template, work)
        os.chdir(work)

    def drafted() -> None:
        text = said.read_text(encoding="utf-8")
        assert "report-0: schedule -> drafted" in text, text[-400:]

    bare = [
        run([sys.executable, "-c", "pass"], wake_env(base, FRIDAY), base)[0] for _ in range(ROUNDS)
    ]
    fresh_cpu = []
    for _ in range(ROUNDS):
        document.write_bytes(pristine)
        fresh(template, work)
        argv = [HZ, "system", "daemon", "tick"]
        fresh_cpu.append(run(argv, wake_env(work, FRIDAY), work)[0])
        assert b"<!-- hz:draft" in document.read_bytes()
    kept = dict(os.environ)
    here = os.getcwd()
    quiet = os.open(said, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND)

    def tick_quietly() -> int:
        os.dup2(quiet, 1)
        os.dup2(quiet, 2)
        return daemon_tick(None)

    def children() -> float:
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        return used.ru_utime + used.ru_stime

    forked: list[float] = []
    warm: list[float] = []
    try:
        preload()  # as the daemon does when it starts; then the forks, as its ticks
        os.environ.clear()
        os.environ.update(wake_env(work, FRIDAY))
        for _ in range(ROUNDS):
            round_home()
            os.ftruncate(quiet, 0)
            before = children()
            assert in_child(tick_quietly) == 0
            forked.append(children() - before)
            drafted()
        saved = os.dup(1), os.dup(2)
        try:
            for n in range(ROUNDS + 1):  # the first warms this process: not counted
                round_home()
                os.ftruncate(quiet, 0)
                before = time.process_time()
                os.dup2(quiet, 1)
                os.dup2(quiet, 2)
                assert daemon_tick(None) == 0
                if n:
                    warm.append(time.process_time() - before)
                drafted()
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
    finally:
        os.chdir(here)
        os.environ.clear()
        os.environ.update(kept)
        os.close(quiet)
        document.write_bytes(pristine)
    floor = statistics.median(bare)
    took, daemon, own = (statistics.median(x) for x in (fresh_cpu, forked, warm))
    print(
        f"drafted wake by a tick: fresh process {took / floor:.1f}x ({took * 1000:.0f} ms CPU), "
        f"resident daemon {daemon / floor:.1f}x ({daemon * 1000:.0f} ms CPU), the turn's own "
        f"work in a warm process {own / floor:.1f}x ({own * 1000:.0f} ms CPU)"
    )
    verdict(
        "a drafted wake the resident daemon runs, beyond the turn's own work",
        (daemon - own) / floor,
        RESIDENT,
        f"{(daemon - own) / floor:.1f}x ({(daemon - own) * 1000:.0f} ms CPU; "
        f"{took / daemon:.1f}x less CPU than a fresh process)",
    )


def fsyncs(template: Path, base: Path) -> None:
    """Item 2 of the module's list."""
    if shutil.which("strace") is None:
        print("MISS fsyncs of a drafted hz heinzel wake: strace is not installed (target 8)")
        return
    work = fresh(template, base / "fsync" / "priya")
    log = base / "strace.txt"
    counted: Callable[[str], int] = lambda now: _counted(work, now, log)  # noqa: E731
    first, later = counted(FRIDAY), counted(LATER)
    verdict("fsyncs of a first drafted hz heinzel wake", first, 10, f"{first}", unit="")
    verdict("fsyncs of a later drafted hz heinzel wake", later, 8, f"{later}", unit="")


def _counted(work: Path, now: str, log: Path) -> int:
    trace = ["strace", "-f", "-c", "-e", "trace=fsync,fdatasync", "-o", str(log)]
    run([*trace, HZ, "heinzel", "wake", "report-0"], wake_env(work, now), work)
    return strace_calls(log)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        template = homes(base / "template")
        provider = Provider("openai", script)
        try:
            startup(template, base, provider)
        finally:
            provider.close()
        fsyncs(template, base)
        resident(template, base)


if __name__ == "__main__":
    main()
