"""A whole ``hz system daemon tick`` over GitHub: 200 Heinzelmännchen watching 20
repositories on the loopback GitHub (`tests/adapters/github_server.py`), each tick a
separate ``hz`` process, the way the systemd timer runs it.

The home is built in-process (contracts created and approved through the service, each
reading ``code-host.merged_pull_requests`` of one of 20 repositories, ``recheck: 1h``, a
weekly schedule that is not due). Figures per tick: wall time of the process, requests
the loopback GitHub saw and their statuses, for a cold tick (every listing read), an
unmoved tick after the recheck (one conditional request per repository, every one a 304)
and a moved one (5 repositories have a new pull request). The baseline, measured in the
same run, is the same ``hz`` process when no recheck is due (no request at all).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from heinzel.config import load_settings
from heinzel.logs import configure_logging
from heinzel.service import Service
from heinzel.store.home import Home

if __package__ in (None, ""):  # run by tests/bench/run.py: the repository is not on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.adapters.github_server import FakeGitHub, pull

REPOS = 20
WATCHERS = 200
HZ = str(Path(sys.executable).with_name("hz"))
CREATED = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)  # a Monday; the slots are on Fridays

CONTRACT = """---
name: {name}
kind: responsibility
hz:
  schedule: "0 15 * * FRI"
  requires: [code-host:read]
  inputs:
    merged_prs:
      {{from: code-host.merged_pull_requests, args: {{repo: {repo}}}, window: 7d, recheck: 1h}}
---

### Goal

A note of what merged in {repo} this week.

### Done when

- [ ] every merged pull request is named
"""


def build(root: Path, url: str) -> None:
    """200 approved Heinzelmännchen over 20 repositories, and the GitHub adapter's table."""
    config = root / "config.toml"
    config.write_text(
        f'[adapters.code-host]\nbackend = "github"\nbase_url = "{url}"\n', encoding="utf-8"
    )
    configure_logging("cli", stream=sys.stderr, clock=lambda: CREATED, level="error")
    loaded = load_settings(env={}, cwd=root, site=None, user=None, data_dir=root / "home")
    service = Service(Home(root / "home"), lambda: CREATED, loaded.settings, owner="bench")
    for w in range(WATCHERS):
        path = root / f"watch-{w}.prose.md"
        path.write_text(CONTRACT.format(name=f"watch-{w}", repo=f"octo/r{w % REPOS}"), "utf-8")
        service.create_from_files([str(path)])
        service.approve(f"watch-{w}")
    service.index.close()


def tick(root: Path, fake: FakeGitHub, now: str) -> tuple[float, int, list[int], int]:
    """One ``hz system daemon tick`` at ``now``: seconds, requests, statuses, woken."""
    fake.seen.clear()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(root),
        "HZ_HOME": str(root / "home"),
        "HZ_CONFIG": str(root / "config.toml"),
        "XDG_CONFIG_HOME": str(root / "xdg"),
        "HZ_NOW": now,
        "HZ_MODEL": "offline",
        "HZ_LOG_LEVEL": "error",
        "GH_TOKEN": "ghp_benchLoopbackToken",
    }
    start = time.perf_counter()
    done = subprocess.run(
        [HZ, "system", "daemon", "tick", "--json"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"hz system daemon tick failed: {done.stderr[-400:]}")
    report = json.loads(done.stdout)
    return took, len(fake.seen), fake.statuses(), len(report["woken"])


def main() -> None:
    routes = {
        f"/repos/octo/r{k}/pulls": [pull(10, "2026-10-29T10:00:00Z", "2026-10-29T10:00:00Z")]
        for k in range(REPOS)
    }
    fake = FakeGitHub(routes=routes).start()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        build(root, fake.url)
        cold = tick(root, fake, "2026-11-02T09:00:00Z")
        cached = tick(root, fake, "2026-11-02T09:30:00Z")
        unmoved = tick(root, fake, "2026-11-02T11:00:00Z")
        for k in range(5):
            routes[f"/repos/octo/r{k}/pulls"].insert(
                0, pull(11, "2026-11-02T11:30:00Z", "2026-11-02T11:30:00Z")
            )
        moved = tick(root, fake, "2026-11-02T13:00:00Z")
    fake.stop()
    base = cached[0]
    print(
        f"{WATCHERS} Heinzelmännchen over {REPOS} repositories, one `hz system daemon tick` "
        "process each"
    )
    print(f"baseline (no recheck due): {base * 1000:8.1f} ms, {cached[1]} requests")
    for label, (took, sent, statuses, woken) in [
        ("cold", cold),
        ("unmoved", unmoved),
        ("moved", moved),
    ]:
        print(
            f"{label:>8} tick: {took * 1000:8.1f} ms, {sent} requests "
            f"({statuses.count(304)} x 304), {woken} woken, "
            f"{took / base if base else 0:6.2f}x baseline"
        )


if __name__ == "__main__":
    main()
