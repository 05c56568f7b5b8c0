"""The tick's staging over GitHub: 200 Heinzelmännchen watching 20 repositories on the
loopback GitHub (`tests/adapters/github_server.py`), through `fetch_once` and the real
GitHub adapter with its on-disk ETag cache.

Figures per tick: requests sent and wall time, for a cold tick (every listing read), an
unmoved tick after the recheck (every listing a 304) and a moved tick (5 of the 20
repositories have a new pull request). The baseline, measured in the same run, is a tick
whose recheck is not due (everything served from the source cache, no request).
"""

from __future__ import annotations

import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from heinzel.capabilities.github import github_code_host
from heinzel.capabilities.github_http import GitHubClient
from heinzel.store.sources import SourceCache, SourceRequest, fetch_once

if __package__ in (None, ""):  # run by tests/bench/run.py: the repository is not on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.adapters.github_server import FakeGitHub, pull

REPOS = 20
WATCHERS = 200
NOW = datetime(2026, 10, 30, 14, 0, tzinfo=UTC)


def main() -> None:
    routes = {
        f"/repos/octo/r{k}/pulls": [pull(10, "2026-10-29T10:00:00Z", "2026-10-29T10:00:00Z")]
        for k in range(REPOS)
    }
    fake = FakeGitHub(routes=routes).start()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        requests = [
            SourceRequest(
                f"hz-{w}",
                "merged_prs",
                "code-host",
                "merged_pull_requests",
                {"repo": f"octo/r{w % REPOS}"},
                timedelta(days=7),
                timedelta(hours=1),
            )
            for w in range(WATCHERS)
        ]
        cache = SourceCache(root / "sources")

        def tick(now: datetime) -> tuple[float, int, list[int]]:
            fake.seen.clear()
            client = GitHubClient("ghp_bench", base_url=fake.url, cache_dir=root / "http")
            adapters = {"code-host": github_code_host(client)}
            start = time.perf_counter()
            fetch_once(requests, adapters, now, cache=cache)  # type: ignore[arg-type]
            took = time.perf_counter() - start
            return took, len(fake.seen), fake.statuses()

        cold = tick(NOW)
        cached = tick(NOW + timedelta(minutes=30))
        unmoved = tick(NOW + timedelta(hours=2))
        for k in range(5):
            routes[f"/repos/octo/r{k}/pulls"].insert(
                0, pull(11, "2026-10-31T10:00:00Z", "2026-10-31T10:00:00Z")
            )
        moved = tick(NOW + timedelta(days=1, hours=2))
    fake.stop()
    base = cached[0]
    print(f"baseline (recheck not due): {base * 1000:8.1f} ms, {cached[1]} requests")
    for label, (took, sent, statuses) in [("cold", cold), ("unmoved", unmoved), ("moved", moved)]:
        n304 = statuses.count(304)
        print(
            f"{label:>8} tick: {took * 1000:8.1f} ms, {sent} requests ({n304} x 304), "
            f"{took / base if base else 0:6.1f}x baseline"
        )


if __name__ == "__main__":
    main()
