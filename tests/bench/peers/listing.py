"""The listing half of ``make bench-peers``: "list my workflows with their status" over
500 and 10,000 of them, for hz, DBOS and LangGraph, interleaved in one run.

The stores are built once per run (all six at once, untimed; ``*_listing.py build``).
Per round, for each size and each system in turn: the whole process, timed from spawn to
exit with the listing printed (``hz heinzel list --json`` and the plain table; DBOS's own
``dbos workflow list --limit N``; for LangGraph, which has no such command, a fresh
interpreter that imports ``SqliteSaver``, lists and prints JSON), and the listing call
in a process that has the store open already (best of 5; ``*_listing.py inprocess``).
``python -c pass`` is timed in each round too, as the floor of any whole process.
Medians over the rounds; each peer as a ratio to hz.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SIZES = (500, 10000)
SYSTEMS = ("hz", "DBOS", "LangGraph")
WHOLE = ("hz", "hz table", "DBOS", "LangGraph")
LABELS = {"hz": "hz --json", "hz table": "hz (table)"}


class Listing:
    """The stores of one run under ``base`` and the commands that list them."""

    def __init__(self, base: Path, peers_python: str) -> None:
        self.base = base
        self.python = {"hz": sys.executable, "DBOS": peers_python, "LangGraph": peers_python}
        self.env = {**os.environ, "HOME": str(base)}

    def store(self, system: str, n: int) -> Path:
        return self.base / f"list-{system}-{n}"

    def script(self, system: str) -> str:
        return str(HERE / f"{system.lower()}_listing.py")

    def build(self) -> None:
        """All six stores at once (the building is not measured)."""
        running = []
        for n in SIZES:
            for system in SYSTEMS:
                args = [self.python[system], self.script(system), "build", str(n)]
                process = subprocess.Popen(
                    [*args, str(self.store(system, n))],
                    env=self.env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                )
                running.append((system, n, process))
        for system, n, process in running:
            _, err = process.communicate()
            if process.returncode != 0:
                raise SystemExit(f"{system}: building {n} failed:\n{err.decode()[-2000:]}")

    def whole(self, name: str, n: int) -> list[str]:
        """The command a person runs to list ``n`` of them."""
        hz = str(Path(sys.executable).with_name("hz"))
        if name == "hz":
            return [hz, "heinzel", "list", "--json", "--home", str(self.store("hz", n))]
        if name == "hz table":
            return [hz, "heinzel", "list", "--home", str(self.store("hz", n))]
        if name == "DBOS":
            dbos = str(Path(self.python["DBOS"]).with_name("dbos"))
            url = f"sqlite:///{self.store('DBOS', n) / 'dbos.sqlite'}"
            return [dbos, "workflow", "list", "-s", url, "--limit", str(n)]
        return [self.python[name], self.script(name), "list", str(self.store(name, n))]

    def run(self, args: list[str]) -> tuple[str, float]:
        start = time.perf_counter()
        done = subprocess.run(args, env=self.env, capture_output=True, text=True, check=False)
        took = (time.perf_counter() - start) * 1000
        if done.returncode != 0:
            raise SystemExit(f"{args[:4]} failed ({done.returncode}):\n{done.stderr[-2000:]}")
        return done.stdout, took

    def check(self, name: str, n: int, out: str) -> None:
        """Each listing shows all ``n`` (JSON: ``n`` rows; the table: a line each)."""
        count = len(out.splitlines()) - 1 if name == "hz table" else len(json.loads(out))
        if count != n:
            raise SystemExit(f"{name}: listed {count} of {n}")

    def inprocess(self, system: str, n: int) -> float:
        args = [self.python[system], self.script(system), "inprocess", str(self.store(system, n))]
        out, _ = self.run(args)
        return float(json.loads(out.strip().splitlines()[-1])["ms"])


def measure(base: Path, peers_python: str, rounds: int) -> list[str]:
    """The listing figures of ``rounds`` interleaved rounds, as lines to print."""
    listing = Listing(base, peers_python)
    listing.build()
    bare: list[float] = []
    whole: dict[tuple[str, int], list[float]] = {(name, n): [] for name in WHOLE for n in SIZES}
    inside: dict[tuple[str, int], list[float]] = {(s, n): [] for s in SYSTEMS for n in SIZES}
    for r in range(rounds):
        bare.append(listing.run([sys.executable, "-c", "pass"])[1])
        for n in SIZES:
            for name in WHOLE:
                out, took = listing.run(listing.whole(name, n))
                if r == 0:
                    listing.check(name, n, out)
                whole[name, n].append(took)
            for system in SYSTEMS:
                inside[system, n].append(listing.inprocess(system, n))
    floor = statistics.median(bare)
    lines = [
        f"listing, {rounds} rounds interleaved, medians (whole process: spawn to exit, "
        f"the list printed; python -c pass {floor:.1f} ms):",
    ]
    for n in SIZES:
        hz_whole = statistics.median(whole["hz", n])
        hz_inside = statistics.median(inside["hz", n])
        lines.append(f"  {n:,} workflows / Heinzelmännchen / threads")
        for name in WHOLE:
            ms = statistics.median(whole[name, n])
            label = LABELS.get(name, name)
            row = f"    {label:10s}  whole process {ms:8.1f} ms ({ms / hz_whole:5.2f}x hz)"
            if name in SYSTEMS:
                at = statistics.median(inside[name, n])
                row += f"   in process {at:8.2f} ms ({at / hz_inside:5.2f}x hz)"
            lines.append(row)
    return lines
