"""Figures for the heinzel core: list in process and as a whole process, and hz --help cold."""

from __future__ import annotations

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
from heinzel.service import Service
from heinzel.store.contracts import store_version
from heinzel.store.home import Home
from ledger.event import make_event

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = ROOT / "fixtures/contracts/good/weekly-report.prose.md"
HZ = str(Path(sys.executable).with_name("hz"))


def populate(root: Path, count: int) -> Service:
    """``count`` approved Heinzelmännchen in the index (rows made by the real projection)."""
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
        for seq, (kind, data) in enumerate(events, start=1):
            event = make_event(seq=seq, ts=ts, prev=prev, kind=kind, data=data)
            service.index.apply(heinzel_id, event)
            prev = event.hash
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


def instructions(argv: list[str], env: dict[str, str]) -> int:
    """The instructions one process executes (valgrind's cachegrind, as
    tests/bench/bench_tick.py counts them); it must exit 0."""
    tool = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    done = subprocess.run([*tool, *argv], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-400:]
    refs = next(line for line in done.stderr.splitlines() if "refs:" in line.split())
    return int(refs.split("refs:")[1].strip().replace(",", ""))


def main() -> None:
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
        small = process_ms([HZ, "heinzel", "list", "--json", "--home", str(base / "h5")], env)
        large = process_ms([HZ, "heinzel", "list", "--json", "--home", str(base / "h5000")], env)
        print(
            f"hz heinzel list --json, whole process: 5: {small:.0f} ms, 5000: {large:.0f} ms,"
            f" ratio {large / small:.2f}x"
        )
        verdict = "PASS" if large / small < 1.5 else "MISS"
        print(
            f"{verdict} hz heinzel list --json 5000 against 5: {large / small:.2f}x (target < 1.5x)"
        )
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
