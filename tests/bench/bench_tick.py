"""Figures for the tick: asleep costs a few index queries, and if-moved saves model calls.

1. A tick over 1,000 asleep Heinzelmännchen with nothing due, against one over 10: the
   time of each (best of seven), the ratio, and the SQL statements each ran (a SQLite
   trace callback), which must be the same.
2. A simulated month of daily slots for 200 Heinzelmännchen whose input (a file) moves on
   one slot in five: the model calls with ``render_on_schedule: if-moved`` against the same
   with ``always``. The tick is the real one (index, staging, moved); the turn runner
   applies the host's rule (a slot where no staged input moved is one ``turn.skipped``
   and no model call) and folds its lines straight into the index.

3. A tick over 10,000 asleep Heinzelmännchen against one over 10, each a real
   ``hz system daemon tick`` process: all watch one file whose recheck (10 minutes) is due
   at every measured tick and which did not move, and no slot is due. The CPU time and
   the peak memory of the process (best of five), as a ratio (targets: 1.5x each), and
   the fsyncs of such a tick over 1,000 by strace (target: 2 or fewer).

Rows are built cheaply, as tests/bench/bench_heinzel.py does: contract files and events
folded into the index, no spines; the 10,000 are ten such, their rows and folders copied
under new ids.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from heinzel.capabilities.files import FilesCapability
from heinzel.clock import Clock
from heinzel.config import load_settings
from heinzel.contract import load_contract
from heinzel.ids import new_id
from heinzel.service import Service
from heinzel.store.contracts import store_version
from heinzel.store.home import Home
from heinzel.store.sources import TickFetch, source_key
from heinzel.tick import Tick
from ledger.event import format_ts, make_event
from machines.keys import Wake

START = datetime(2026, 11, 2, 9, tzinfo=UTC)


class Now:
    """The bench's clock, moved by hand."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


def write_contract(folder: Path, name: str, render: str, recheck: str) -> Path:
    path = folder / f"{name}.prose.md"
    path.write_text(
        "\n".join(
            [
                "---",
                f"name: {name}",
                "kind: responsibility",
                "hz:",
                '  schedule: "0 15 * * *"',
                "  timezone: Europe/Berlin",
                f"  render_on_schedule: {render}",
                "  requires: [files:read]",
                "  inputs:",
                f"    notes: {{from: files.read, args: {{path: notes.txt}}{recheck}}}",
                "---",
                "",
                "### Goal",
                "",
                "Keep the notes summarised.",
                "",
                "### Done when",
                "",
                "- [ ] the summary is current",
                "",
            ]
        ),
        encoding="utf-8",
    )
    return path


def populate(
    service: Service, root: Path, count: int, render: str, recheck: str
) -> dict[str, tuple[int, str]]:
    """``count`` approved ones, each in its own folder with its own ``notes.txt``; their
    last (seq, hash), for folding more lines."""
    ids: dict[str, tuple[int, str]] = {}
    ts = format_ts(service.clock())
    for i in range(count):
        folder = root / f"c{i:04d}"
        folder.mkdir(parents=True)
        (folder / "notes.txt").write_text("v0\n", encoding="utf-8")
        path = write_contract(folder, f"notes-{i:04d}", render, recheck)
        heinzel_id = new_id(service.clock)
        facts = store_version(service.home, heinzel_id, 1, path.read_text(), load_contract(path))
        events = (
            ("heinzel.created", {"name": f"n-{i:04d}", "namespace": "me", "origin": str(folder)}),
            ("contract.proposed", {"version": 1, "fingerprint": facts.fingerprint, "by": "user"}),
            ("contract.approved", {"version": 1, "fingerprint": facts.fingerprint}),
        )
        prev = None
        for seq, (kind, data) in enumerate(events, start=1):
            event = make_event(seq=seq, ts=ts, prev=prev, kind=kind, data=data)
            service.index.apply(heinzel_id, event)
            prev = event.hash
        ids[heinzel_id] = (3, event.hash)
    return ids


class Host:
    """The turn host's rule for the bench: render (one model call) unless the contract is
    if-moved and no staged input moved; either way, the turn's lines go to the index."""

    def __init__(self, service: Service, if_moved: bool, last: dict[str, tuple[int, str]]) -> None:
        self.service = service
        self.if_moved = if_moved
        self.model_calls = 0
        self.last = dict(last)

    def run_wakes(
        self,
        heinzel_id: str,
        wakes: Sequence[Wake],
        *,
        adapters: Mapping[str, object],
        staged: TickFetch | None = None,
    ) -> list[Any]:
        moved = any(s.moved for s in (staged.staged if staged else []))
        data = {
            "cause": wakes[0].cause,
            "causes": [{"cause": w.cause, "key": w.key} for w in wakes],
            "keys": [w.key for w in wakes],
        }
        if self.if_moved and not moved:
            self._fold(heinzel_id, "turn.skipped", {**data, "reason": "nothing-moved"}, wakes)
        else:
            self.model_calls += 1
            self._fold(heinzel_id, "turn.started", data, wakes)
            self._fold(heinzel_id, "turn.finished", {"disposition": "drafted"}, wakes)
        return []

    def _fold(
        self, heinzel_id: str, kind: str, data: dict[str, Any], wakes: Sequence[Wake]
    ) -> None:
        seq, prev = self.last[heinzel_id]
        seq += 1
        event = make_event(
            seq=seq,
            ts=format_ts(self.service.clock()),
            prev=prev,
            kind=kind,
            data=data,
            turn=f"t-{heinzel_id[-8:]}-{seq}",
            key=wakes[0].key,
        )
        self.service.index.apply(heinzel_id, event)
        self.last[heinzel_id] = (seq, event.hash)

    def resume_turn(
        self, heinzel_id: str, turn: str, woken_by: str, *, adapters: Mapping[str, object]
    ) -> None:
        """No turn waits in this bench."""


def make_service(root: Path, clock: Clock, max_wakes: int) -> Service:
    root.mkdir(parents=True, exist_ok=True)
    config = root / "hz.toml"
    config.write_text(f"[heinzel]\nmax_wakes_per_tick = {max_wakes}\n", encoding="utf-8")
    settings = load_settings(
        env={"HZ_CONFIG": str(config)}, cwd=root, site=None, user=None, data_dir=root
    ).settings
    return Service(Home(root / "home"), clock, settings, owner="bench")


def asleep(base: Path, count: int) -> tuple[float, int]:
    """Best-of-seven ms of a tick with nothing due over ``count``, and its statements."""
    clock = Now()
    service = make_service(base / f"asleep{count}", clock, 10)
    last = populate(
        service, base / f"asleep{count}" / "contracts", count, "always", ", recheck: 1d"
    )
    host = Host(service, False, last)
    adapters = {"files": FilesCapability()}
    Tick(service, host, adapters, sleep=time.sleep).run()  # the first poll of every input
    clock.now += timedelta(minutes=5)
    times = []
    for _ in range(7):
        started = time.perf_counter()
        Tick(service, host, adapters, sleep=time.sleep).run()
        times.append((time.perf_counter() - started) * 1000)
    statements: list[str] = []
    service.index.db.conn.set_trace_callback(statements.append)
    Tick(service, host, adapters, sleep=time.sleep).run()
    service.index.db.conn.set_trace_callback(None)
    assert host.model_calls == 0
    return min(times), len(statements)


def month(base: Path, render: str, count: int = 200, days: int = 30) -> tuple[int, int]:
    """Model calls and slots over ``days`` daily slots for ``count`` Heinzelmännchen whose
    notes move on one slot in five."""
    clock = Now()
    root = base / f"month-{render}"
    service = make_service(root, clock, count)
    ids = populate(service, root / "contracts", count, render, "")
    host = Host(service, render == "if-moved", ids)
    adapters = {"files": FilesCapability()}
    clock.now = START.replace(hour=14, minute=30)
    for day in range(days):
        for i in range(len(ids)):
            if (day + i) % 5 == 0:
                notes = root / "contracts" / f"c{i:04d}" / "notes.txt"
                notes.write_text(f"v{day}\n", encoding="utf-8")
        report = Tick(service, host, adapters, sleep=time.sleep).run()
        assert not report.errors and not report.deferred, report
        clock.now += timedelta(days=1)
    return host.model_calls, count * days


HZ = str(Path(sys.executable).with_name("hz"))
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
CLONED = ("heinzel", "tick_origins", "tick_inputs", "_watermarks")
"""The index tables that hold a row per Heinzelmännchen in these homes."""


def shared_fleet(base: Path, count: int) -> Path:
    """A home of ``count`` approved ones that all watch ``shared.txt`` (recheck 10m, a
    daily slot at 15:00 Berlin), polled once at `START`: ten built, the rest copies."""
    root = base / f"fleet{count}"
    clock = Now()
    service = make_service(root, clock, 10)
    shared = root / "shared.txt"
    shared.write_text("v0\n", encoding="utf-8")
    folder = root / "contracts"
    made = populate(service, folder, min(count, 10), "always", ", recheck: 10m")
    for path in folder.glob("c*/notes-*.prose.md"):
        text = path.read_text(encoding="utf-8").replace("path: notes.txt", f"path: {shared}")
        path.write_text(text, encoding="utf-8")
    service.index.db.conn.execute(  # the contracts' input, as if they had named the file
        "UPDATE tick_inputs SET args = ?, source_key = ?",
        [
            json.dumps({"path": str(shared)}),
            source_key("files", "read", {"path": str(shared)}, None),
        ],
    )
    service.index.db.conn.execute("DELETE FROM tick_sources")
    service.index.db.conn.execute(
        "INSERT INTO tick_sources SELECT DISTINCT source_key, '' FROM tick_inputs"
    )
    service.index.db.conn.commit()
    service.index.close()
    templates = sorted(made)
    db = sqlite3.connect(root / "home" / "heinzel" / "index.sqlite")
    with db:
        for n in range(count - len(templates)):
            template = templates[n % len(templates)]
            clone = template[:-6] + "".join(CROCKFORD[(n >> (5 * k)) & 31] for k in range(6))
            for table in CLONED:
                column = "source" if table == "_watermarks" else "heinzel"
                column = "id" if table == "heinzel" else column
                rows = db.execute(
                    f"SELECT * FROM {table} WHERE {column} = ?",
                    [template],
                ).fetchall()
                names = [d[0] for d in db.execute(f"SELECT * FROM {table} LIMIT 0").description]
                at = names.index(column)
                marks = ", ".join("?" for _ in names)
                db.executemany(
                    f"INSERT INTO {table} VALUES ({marks})",
                    [[clone if i == at else v for i, v in enumerate(r)] for r in rows],
                )
            folders = root / "home" / "heinzel"
            shutil.copytree(folders / template, folders / clone, symlinks=True)
    db.close()
    tick_process(root, START)  # the first poll of the file
    return root


_FRESH = """
import json, os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as out:
    json.dump([usage.ru_utime + usage.ru_stime, usage.ru_maxrss], out)
sys.exit(os.waitstatus_to_exitcode(status))
"""
"""Runs argv[2:] in a child forked from this small process and writes its CPU seconds and
peak memory to argv[1]. Linux keeps a process's peak memory across ``exec``, so a child
forked straight from this bench (hundreds of MiB once it has built a fleet of 10,000)
would report the bench's peak as its own; forked from a fresh interpreter, the figure is
the tick's (the interpreter's few MiB are below it)."""


def tick_process(root: Path, at: datetime, strace: Path | None = None) -> tuple[float, int]:
    """One ``hz system daemon tick`` over the home at ``at``: its CPU seconds and peak
    memory (KiB), from its own rusage, in a child of a fresh process (`_FRESH`)."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(root),
        "HZ_HOME": str(root / "home"),
        "HZ_CONFIG": str(root / "hz.toml"),
        "HZ_NOW": format_ts(at),
    }
    if os.environ.get("PYTHONPATH"):  # another checkout's code: an older commit's figures
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    argv = [HZ, "system", "daemon", "tick", "--json"]
    if strace is not None:
        argv = [
            shutil.which("strace") or "strace",
            "-f",
            "-c",
            "-e",
            "trace=fsync,fdatasync",
            "-o",
            str(strace),
            *argv,
        ]
    with tempfile.TemporaryDirectory() as scratch:
        figures = Path(scratch) / "usage.json"
        done = subprocess.run(
            [sys.executable, "-c", _FRESH, str(figures), *argv],
            env=env,
            capture_output=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-400:]
        report = json.loads(done.stdout)
        seconds, kib = json.loads(figures.read_text())
    assert not report["woken"] and not report["errors"] and report["fetches"] == 1, report
    return float(seconds), int(kib)


def verdict(name: str, figure: float, target: float, text: str, unit: str = "x") -> None:
    word = "PASS" if figure <= target else "MISS"
    print(f"{word} {name}: {text} (target {target:g}{unit})")


def flat(base: Path) -> None:
    """Item 3 of the module's list: a tick's CPU and peak memory, 10 against 10,000."""
    small, large = shared_fleet(base, 10), shared_fleet(base, 10_000)
    cpu: dict[Path, list[float]] = {small: [], large: []}
    peak: dict[Path, list[int]] = {small: [], large: []}
    for k in range(1, 6):  # 09:20 ... 10:40: the file's recheck due each time, no slot
        for root in (small, large):
            seconds, kib = tick_process(root, START + timedelta(minutes=20 * k))
            cpu[root].append(seconds)
            peak[root].append(kib)
    c10, c10k = min(cpu[small]), min(cpu[large])
    m10, m10k = min(peak[small]), min(peak[large])
    print(f"tick process, nothing due, over     10 asleep: {c10:6.3f} s CPU {m10 / 1024:6.1f} MiB")
    print(
        f"tick process, nothing due, over 10,000 asleep: {c10k:6.3f} s CPU {m10k / 1024:6.1f} MiB"
    )
    verdict("tick CPU 10,000 / 10 asleep", c10k / c10, 1.5, f"{c10k / c10:.2f}x")
    idle_and_skip(base, c10)
    idle_and_skip_instructions(base, small, large)
    verdict("tick peak memory 10,000 / 10 asleep", m10k / m10, 1.5, f"{m10k / m10:.2f}x")
    if shutil.which("strace") is None:
        print("MISS tick fsyncs over 1,000 asleep: strace is not installed (target 2)")
        return
    thousand = shared_fleet(base, 1000)
    log = base / "strace-tick.txt"
    tick_process(thousand, START + timedelta(minutes=20), strace=log)
    calls = strace_calls(log)
    verdict("tick fsyncs over 1,000 asleep, nothing due", calls, 2, f"{calls}", unit="")


def cpu_of(argv: list[str], env: dict[str, str]) -> float:
    """CPU seconds of one child process (its own rusage); it must exit 0."""
    child = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert child.stderr is not None
    err = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, err[-400:]
    child.stderr.close()
    return usage.ru_utime + usage.ru_stime


def idle_and_skip(base: Path, moved_nothing: float) -> None:
    """Issue 42 item 1: an idle tick (a home with nothing in it, so nothing due: the due
    queries and nothing else) and a nothing-moved tick (10 asleep, their shared file's
    recheck due, nothing moved, no wake: ``moved_nothing``, the least of `flat`'s rounds),
    as ratios of CPU to ``python -c pass`` measured beside them. Targets 6x and 8x."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(base)}
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    empty = {**env, "HZ_HOME": str(base / "idle-home"), "HZ_NOW": format_ts(START)}
    bare = [cpu_of([sys.executable, "-c", "pass"], env) for _ in range(9)]
    idle = [cpu_of([HZ, "system", "daemon", "tick"], empty) for _ in range(9)]
    floor, took = statistics.median(bare), statistics.median(idle)
    print(f"python -c pass (baseline): {floor * 1000:6.1f} ms CPU")
    verdict(
        "an idle tick (nothing due), CPU",
        took / floor,
        6,
        f"{took / floor:.1f}x ({took * 1000:.0f} ms CPU)",
    )
    verdict(
        "a nothing-moved tick (a recheck, no wake), CPU",
        moved_nothing / floor,
        8,
        f"{moved_nothing / floor:.1f}x ({moved_nothing * 1000:.0f} ms CPU)",
    )


def _homed(root: Path) -> dict[str, str]:
    return {"HOME": str(root), "HZ_HOME": str(root / "home"), "HZ_CONFIG": str(root / "hz.toml")}


def idle_and_skip_instructions(base: Path, small: Path, large: Path | None = None) -> None:
    """The same two ticks as `idle_and_skip` by instructions executed (valgrind's
    cachegrind, one run each), beside ``python -c pass`` counted the same way: CPU time on
    a machine other work loads moves by 10% or more, the instruction count by well under
    1%. ``small``: `flat`'s home of 10, whose file's recheck is due again at 11:00."""
    if shutil.which("valgrind") is None:
        print("instructions: valgrind is not installed (CPU ratios above only)")
        return
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(base)}
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    empty = {**env, "HZ_HOME": str(base / "idle-home"), "HZ_NOW": format_ts(START)}
    fleet = {
        **env,
        "HOME": str(small),
        "HZ_HOME": str(small / "home"),
        "HZ_CONFIG": str(small / "hz.toml"),
        "HZ_NOW": format_ts(START + timedelta(minutes=120)),
    }
    floor = instructions([sys.executable, "-c", "pass"], env)
    idle = instructions([HZ, "system", "daemon", "tick"], empty)
    moved = instructions([HZ, "system", "daemon", "tick"], fleet)
    if large is not None:  # the same tick over 10,000, its file's recheck due as well
        many = instructions([HZ, "system", "daemon", "tick"], {**fleet, **_homed(large)})
        print(
            f"tick, a recheck due, over 10,000 / 10 asleep, instructions: {many / moved:.2f}x"
            f" ({many / 1e6:.0f} M / {moved / 1e6:.0f} M)"
        )
    print(f"python -c pass (baseline): {floor / 1e6:6.0f} M instructions")
    verdict(
        "an idle tick (nothing due), instructions",
        idle / floor,
        6,
        f"{idle / floor:.1f}x ({idle / 1e6:.0f} M)",
    )
    verdict(
        "a nothing-moved tick (a recheck, no wake), instructions",
        moved / floor,
        8,
        f"{moved / floor:.1f}x ({moved / 1e6:.0f} M)",
    )


def instructions(argv: list[str], env: dict[str, str]) -> int:
    """The instructions one process executes (valgrind's cachegrind, no cache simulation:
    ``I   refs``); it must exit 0."""
    tool = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    done = subprocess.run([*tool, *argv], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-400:]
    refs = next(line for line in done.stderr.splitlines() if "refs:" in line.split())
    return int(refs.split("refs:")[1].strip().replace(",", ""))


def strace_calls(log: Path) -> int:
    """The fsync and fdatasync calls a ``strace -c`` summary counts."""
    total = 0
    for line in log.read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if parts and parts[-1] in ("fsync", "fdatasync"):
            total += int(parts[3])
    return total


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        flat(base)
        small_ms, small_sql = asleep(base, 10)
        large_ms, large_sql = asleep(base, 1000)
        print(
            f"tick, nothing due, over    10 asleep: {small_ms:8.2f} ms  {small_sql} SQL statements"
        )
        print(
            f"tick, nothing due, over 1,000 asleep: {large_ms:8.2f} ms  {large_sql} SQL statements"
        )
        print(
            f"ratio 1,000 / 10: {large_ms / small_ms:.2f}x time, {large_sql / small_sql:.2f}x SQL"
        )
        always, slots = month(base, "always")
        moved, _ = month(base, "if-moved")
        print(f"a month, 200 with daily slots ({slots} slots), inputs moving one slot in five:")
        print(f"  model calls, render_on_schedule always:   {always:6d}")
        print(f"  model calls, render_on_schedule if-moved: {moved:6d}")
        print(f"  ratio if-moved / always: {moved / always:.2f}")


if __name__ == "__main__":
    main()
