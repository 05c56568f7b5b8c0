"""Figures for start-up by need: each command as a whole process, as a ratio to
``python -c pass`` measured interleaved in the same run (median of several).

Targets (issue 15): ``hz --help`` 5x, ``hz heinzel list`` over 500 rows 8x, a refusal that
needs no work 8x (``hz heinzel stop`` with no running turn), a tick that recovers a turn
killed in act and calls no model 15x (a fresh copy of the killed home each round). Also
``list --json`` over 10,000 rows, and which heavy modules each command loads.
``PYTHONPATH=<another checkout>`` runs that checkout's code instead (an older commit's
figures on the same machine).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench_heinzel import populate

from heinzel.logs import configure_logging
from tests.tick.homes import CREATED, FRIDAY, make_home

HZ = str(Path(sys.executable).with_name("hz"))
HEAVY = (
    "pydantic_ai",
    "pydantic",
    "yaml",
    "sqlite_utils",
    "structlog",
    "machines",
    "heinzel.contract.compiler",
)
ROUNDS = 9


def once(args: list[str], env: dict[str, str], ok: bool) -> float:
    start = time.perf_counter()
    done = subprocess.run(args, env=env, capture_output=True, check=False)
    took = (time.perf_counter() - start) * 1000
    assert (done.returncode == 0) == ok, (args, done.stderr[-400:])
    return took


def heavy_modules(argv: list[str], env: dict[str, str]) -> list[str]:
    """The heavy packages a command loads, from the child's own sys.modules at exit."""
    code = (
        "import atexit, sys\n"
        f"heavy = {HEAVY!r}\n"
        "atexit.register(lambda: sys.stderr.write('MODULES ' + ' '.join(sorted("
        "h for h in heavy if h in sys.modules)) + '\\n'))\n"
        "sys.argv = ['hz', *sys.argv[1:]]\n"
        "from heinzel.cli import main\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *argv], env=env, capture_output=True, cwd=env["HOME"]
    )
    for line in done.stderr.decode().splitlines():
        if line.startswith("MODULES"):
            return line.split()[1:]
    return ["?"]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        populate(base / "h500", 500)
        populate(base / "h10000", 10000)
        env = {"PATH": "/usr/bin:/bin", "HOME": tmp}
        if os.environ.get("PYTHONPATH"):  # another checkout's code, to compare (see above)
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        cases = {
            "hz --help": ([HZ, "--help"], True, 5),
            "hz heinzel list (500)": ([HZ, "heinzel", "list", "--home", f"{tmp}/h500"], True, 8),
            "hz heinzel stop (refusal)": (
                [HZ, "heinzel", "stop", "report-00007", "--home", f"{tmp}/h500"],
                False,
                8,
            ),
            "hz heinzel list --json (10000)": (
                [HZ, "heinzel", "list", "--json", "--home", f"{tmp}/h10000"],
                True,
                0,
            ),
        }
        killed = killed_in_act(base / "killed")
        template = base / "template"
        shutil.copytree(killed, template, symlinks=True)
        tick_env = {**env, "HZ_HOME": str(killed / "home"), "HZ_NOW": FRIDAY}
        tick_env["HZ_FIXTURE_SOURCES"] = str(killed)
        recovering = [HZ, "system", "daemon", "tick", "--json"]
        bare: list[float] = []
        times: dict[str, list[float]] = {name: [] for name in cases}
        ticks: list[float] = []
        for _ in range(ROUNDS):
            bare.append(once([sys.executable, "-c", "pass"], env, True))
            for name, (args, ok, _) in cases.items():
                times[name].append(once(args, env, ok))
            fresh(template, killed)
            ticks.append(once(recovering, tick_env, True))
        floor = statistics.median(bare)
        print(f"python -c pass (baseline):          {floor:7.1f} ms")
        for name, (args, _, target) in cases.items():
            report(name, statistics.median(times[name]), floor, target)
            print(f"    loads: {' '.join(heavy_modules(args[1:], env)) or '-'}")
        report("hz system daemon tick (recovers)", statistics.median(ticks), floor, 15)
        fresh(template, killed)
        print(f"    loads: {' '.join(heavy_modules(recovering[1:], tick_env)) or '-'}")


def report(name: str, ms: float, floor: float, target: int) -> None:
    print(f"{name:35s} {ms:7.1f} ms  {ms / floor:5.1f}x")
    if target:
        verdict = "PASS" if ms / floor <= target else "MISS"
        print(f"{verdict} {name}: {ms / floor:.1f}x python -c pass (target {target}x)")


def killed_in_act(where: Path) -> Path:
    """A home whose one Heinzelmännchen's turn was killed right after ``effect.started``
    (act, the model already called): the next tick recovers it without calling a model."""
    where.mkdir()
    configure_logging("cli", stream=sys.stderr, clock=lambda: CREATED, level="warning")
    root, _ids = make_home(where, 1)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(where), "HZ_HOME": str(root / "home")}
    env |= {"HZ_NOW": FRIDAY, "HZ_FIXTURE_SOURCES": str(root)}
    done = subprocess.run(
        [HZ, "system", "daemon", "tick"],
        env={**env, "HZ_CRASH_AT": "after:effect.started"},
        cwd=root,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 137, done.stderr[-400:]
    return root


def fresh(template: Path, to: Path) -> None:
    """``to`` restored from its copy, in place (the index keeps absolute paths): each round
    recovers the same killed turn."""
    shutil.rmtree(to, ignore_errors=True)
    shutil.copytree(template, to, symlinks=True)


if __name__ == "__main__":
    main()
