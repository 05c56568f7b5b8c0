"""Figures for the heinzel core: list in process and as a whole process, and hz --help cold."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from heinzel.clock import fixed_clock
from heinzel.config import load_settings
from heinzel.contract import load_contract
from heinzel.ids import new_id
from heinzel.logs import configure_logging
from heinzel.service import Service
from heinzel.store.contracts import store_version
from heinzel.store.home import Home
from ledger.event import make_event

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = ROOT / "fixtures/contracts/good/weekly-report.prose.md"
HZ = str(Path(sys.executable).with_name("hz"))


def populate(root: Path, count: int) -> Service:
    """``count`` approved Heinzelmännchen as a home holds them: each its spine on disk (the
    lines hz writes, unsynced), the index caught up from it by the real projection, so that
    `list` checks each one's currency against a real file, as in a person's home."""
    clock = fixed_clock(datetime(2026, 10, 26, 9, tzinfo=UTC))
    settings = load_settings(env={}, cwd=root, site=None, user=None, data_dir=root).settings
    service = Service(Home(root), clock, settings, owner="bench")
    compiled = load_contract(CONTRACT)
    text = CONTRACT.read_text()
    ts = "2026-10-26T09:00:00.000Z"
    for i in range(count):
        heinzel_id = new_id(clock)
        facts = store_version(service.home, heinzel_id, 1, text, compiled)
        prev = None
        events = (
            ("heinzel.created", {"name": f"report-{i:05d}", "namespace": "me", "owner": "b"}),
            ("contract.proposed", {"version": 1, "fingerprint": facts.fingerprint, "by": "user"}),
            ("contract.approved", {"version": 1, "fingerprint": facts.fingerprint}),
        )
        lines = []
        for seq, (kind, data) in enumerate(events, start=1):
            event = make_event(seq=seq, ts=ts, prev=prev, kind=kind, data=data)
            lines.append(event.line())
            prev = event.hash
        spine = service.home.spine_path(heinzel_id)
        spine.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        spine.write_bytes(b"".join(lines))
        spine.chmod(0o600)
        service.index.catch_up(heinzel_id, spine)
    return service


def best_ms(func: object, repeat: int = 7) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()  # type: ignore[operator]
        times.append((time.perf_counter() - start) * 1000)
    return min(times)


def process_ms(args: list[str], env: dict[str, str], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(args, env=env, check=True, capture_output=True)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def process_cpu_ms(
    runs: dict[str, list[str]], env: dict[str, str], rounds: int = 9
) -> dict[str, float]:
    """Each process's own CPU (user + system, its rusage), the median of ``rounds``, the
    processes interleaved round by round so that a change of load meets them all alike."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, args in runs.items():
            child = subprocess.Popen(
                args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            _, status, usage = os.wait4(child.pid, 0)
            assert os.waitstatus_to_exitcode(status) == 0, args
            times[name].append((usage.ru_utime + usage.ru_stime) * 1000)
    return {name: statistics.median(found) for name, found in times.items()}


def instructions(argv: list[str], env: dict[str, str]) -> int:
    """The instructions one process executes (valgrind's cachegrind, as
    tests/bench/bench_tick.py counts them); it must exit 0."""
    tool = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    done = subprocess.run([*tool, *argv], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-400:]
    refs = next(line for line in done.stderr.splitlines() if "refs:" in line.split())
    return int(refs.split("refs:")[1].strip().replace(",", ""))


def main() -> None:
    at = datetime(2026, 10, 26, 9, tzinfo=UTC)
    configure_logging("cli", stream=sys.stderr, clock=lambda: at, level="warning")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        sizes = {5: None, 500: None, 5000: None, 10000: None}
        services = {n: populate(base / f"h{n}", n) for n in sizes}
        for n in (500, 10000):
            ms = best_ms(services[n].listing)
            print(f"list in process over {n:>6}: {ms:8.2f} ms")
            if n == 500:
                verdict = "PASS" if ms < 50 else "MISS"
                print(f"{verdict} list in process over 500: {ms:.2f} ms (target < 50 ms)")
        artifact = best_ms(lambda: services[10000].listing(artifact="doc:checkout/weekly-report"))
        print(f"list --artifact over  10000: {artifact:8.2f} ms")
        env = {"PATH": "/usr/bin:/bin", "HOME": tmp}
        listing = [HZ, "heinzel", "list", "--json", "--home"]
        small = process_ms([*listing, str(base / "h5")], env)
        large = process_ms([*listing, str(base / "h5000")], env)
        print(
            f"hz heinzel list --json, whole process (wall): 5: {small:.0f} ms, "
            f"5000: {large:.0f} ms, ratio {large / small:.2f}x"
        )
        cpu = process_cpu_ms(
            {"5": [*listing, str(base / "h5")], "5000": [*listing, str(base / "h5000")]}, env
        )
        ratio = cpu["5000"] / cpu["5"]
        print(
            f"hz heinzel list --json, CPU (interleaved, median of 9): 5: {cpu['5']:.0f} ms, "
            f"5000: {cpu['5000']:.0f} ms, ratio {ratio:.2f}x"
        )
        verdict = "PASS" if ratio < 1.5 else "MISS"
        print(f"{verdict} hz heinzel list --json 5000 against 5: {ratio:.2f}x CPU (target < 1.5x)")
        if shutil.which("valgrind") is not None:  # CPU time moves with load; these do not
            argv = [HZ, "heinzel", "list", "--json", "--home"]
            few = instructions([*argv, str(base / "h5")], env)
            many = instructions([*argv, str(base / "h5000")], env)
            print(
                f"hz heinzel list --json, instructions: 5: {few / 1e6:.0f} M, "
                f"5000: {many / 1e6:.0f} M, ratio {many / few:.2f}x"
            )
        bare = process_ms([sys.executable, "-c", "pass"], env)
        helped = process_ms([HZ, "--help"], env)
        print(f"hz --help cold: {helped:.0f} ms (python -c pass: {bare:.0f} ms)")
        verdict = "PASS" if helped < 300 else "MISS"
        print(f"{verdict} hz --help cold: {helped:.0f} ms (target < 300 ms)")


if __name__ == "__main__":
    main()
