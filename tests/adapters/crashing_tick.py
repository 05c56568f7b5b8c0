"""A tick that stages one source for two watchers, run as a real process by test_sources.

Usage: ``python crashing_tick.py HOME NOW CALLS CRASH``. Every adapter call appends a line
to CALLS; with CRASH ``after-put`` the process dies (``os._exit(137)``) right after the
cache entry is written, i.e. between fetch and wake. It prints the fetch count, the
watchers whose input moved, and whether every answer came from the cache.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from heinzel.capabilities.protocols import Fetched, MethodSpec, Window, check_call, fetched
from heinzel.store.sources import SourceCache, SourceRequest, fetch_once


class Counted:
    """A code host whose every fetch is logged to a file shared across processes."""

    name = "code-host"
    methods: Mapping[str, MethodSpec] = {
        "merged_pull_requests": MethodSpec("merged_pull_requests", True, frozenset({"repo"}))
    }

    def __init__(self, calls: Path) -> None:
        self.calls = calls

    def fetch(
        self, method: str, args: Mapping[str, Any], window: Window | None, *, now: datetime
    ) -> Fetched:
        check_call(self, method, args, window)
        with self.calls.open("a", encoding="utf-8") as log:
            log.write("fetch\n")
        return fetched([402], {"items": [402]}, cursor=None, now=now)


class Crashing(SourceCache):
    """A cache whose process dies right after an entry is staged, when asked to."""

    def __init__(self, directory: Path, crash: str) -> None:
        super().__init__(directory)
        self.crash = crash

    def put(self, key: str, fetched: Fetched, *, source: Mapping[str, Any] | None = None) -> None:
        """The entry staged (written, as a killed process leaves it), then the crash."""
        super().put(key, fetched, source=source)
        if self.crash == "after-put":
            os._exit(137)


def main() -> None:
    home, now = Path(sys.argv[1]), datetime.fromisoformat(sys.argv[2])
    calls, crash = Path(sys.argv[3]), sys.argv[4]
    requests = [
        SourceRequest(
            watcher,
            "merged_prs",
            "code-host",
            "merged_pull_requests",
            {"repo": "acme/checkout"},
            window=timedelta(days=7),
            recheck=timedelta(hours=1),
        )
        for watcher in ("hz-a", "hz-b")
    ]
    cache = Crashing(home / "heinzel" / "sources", crash)
    got = fetch_once(requests, {"code-host": Counted(calls)}, now, cache=cache)
    print(got.fetches, ",".join(sorted(got.moved())), all(s.from_cache for s in got.staged))


if __name__ == "__main__":
    main()
