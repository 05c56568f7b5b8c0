"""Requests per nothing-moved recheck, per source adapter, counted by the servers: a real
Radicale (its request log) for CalDAV, a loopback web server for an ``.ics`` URL, the
loopback GitHub for a GitHub listing.

Each adapter fetches once (cold), then rechecks an hour later with nothing moved. The
figure is the recheck's requests with what the adapter keeps between ticks (ctag /
sync-token, ETag); the baseline, measured in the same run, is the same recheck by an
adapter that keeps nothing (as every tick was before): discovery and a full read.
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from heinzel.capabilities.calendars import CalDAVCalendar, ICSCalendar  # noqa: E402
from heinzel.capabilities.github import github_code_host  # noqa: E402
from heinzel.capabilities.github_http import GitHubClient  # noqa: E402
from heinzel.capabilities.protocols import Window  # noqa: E402
from tests.adapters.github_server import FakeGitHub, pull  # noqa: E402
from tests.adapters.ics_server import ICSServer  # noqa: E402
from tests.adapters.test_calendars import ICS, per_uid  # noqa: E402

NOW = datetime(2026, 10, 30, 15, 0, tzinfo=UTC)
LATER = NOW + timedelta(hours=1)
SPAN = timedelta(days=7)
REQUEST = re.compile(r"\] (GET|PROPFIND|REPORT) request for")


def _recheck(fetch: Callable[[datetime], object], count: Callable[[], int]) -> int:
    """Requests of one recheck an hour after a first fetch (nothing moved between)."""
    fetch(NOW)
    before = count()
    fetch(LATER)
    return count() - before


def _caldav(work: Path) -> tuple[int, int, list[str]]:
    import caldav

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    (work / "users").write_text("priya:s3cret\n")
    log = work / "radicale.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "radicale", "--server-hosts", f"127.0.0.1:{port}",
             "--storage-filesystem-folder", str(work / "collections"), "--auth-type",
             "htpasswd", "--auth-htpasswd-filename", str(work / "users"),
             "--auth-htpasswd-encryption", "plain", "--rights-type", "owner_only",
             "--logging-level", "info"],
            stdout=out,
            stderr=out,
        )  # fmt: skip
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                subprocess.run(["sleep", "0.05"], check=True)  # waiting for the port
        url = f"http://127.0.0.1:{port}/priya/"
        calendar = caldav.DAVClient(url=url, username="priya", password="s3cret")
        work_calendar = calendar.principal().make_calendar(name="work")
        for one in per_uid(ICS):
            work_calendar.save_event(one)

        def requests() -> list[str]:
            return REQUEST.findall(log.read_text("utf-8", "replace"))

        def source(cache: Path | None) -> Callable[[datetime], object]:
            adapter = CalDAVCalendar(url, username="priya", password="s3cret", cache_dir=cache)
            return lambda now: adapter.fetch(
                "events", {"calendar": "work"}, Window.ending_at(now, SPAN), now=now
            )

        kept = _recheck(source(work / "kept"), lambda: len(requests()))
        start = len(requests())
        plain = _recheck(source(None), lambda: len(requests()))
        methods = requests()[start:]
    finally:
        process.terminate()
        process.wait(timeout=10)
    return kept, plain, methods[len(methods) // 2 :]


def _ics(work: Path) -> tuple[int, int, str]:
    server = ICSServer(ICS).start()
    try:

        def source(cache: Path | None) -> Callable[[datetime], object]:
            adapter = ICSCalendar(url=server.url, cache_dir=cache)
            return lambda now: adapter.fetch("events", {}, Window.ending_at(now, SPAN), now=now)

        kept = _recheck(source(work / "ics"), lambda: len(server.seen))
        answered = server.seen[1][0]
        plain = _recheck(source(None), lambda: len(server.seen))
    finally:
        server.stop()
    return kept, plain, f"  [kept: {answered}, baseline: {server.seen[-1][0]}]"


def _github(work: Path) -> tuple[int, int, str]:
    items = [pull(k, "2026-10-29T10:00:00Z", "2026-10-29T10:00:00Z") for k in range(5, 0, -1)]
    server = FakeGitHub(routes={"/repos/octo/app/pulls": items}).start()
    try:

        def source(cache: Path | None) -> Callable[[datetime], object]:
            adapter = github_code_host(GitHubClient("t", base_url=server.url, cache_dir=cache))
            return lambda now: adapter.fetch(
                "merged_pull_requests", {"repo": "octo/app"}, Window.ending_at(now, SPAN), now=now
            )

        kept = _recheck(source(work / "github"), lambda: len(server.seen))
        answered = server.statuses()[-1]
        plain = _recheck(source(None), lambda: len(server.seen))
    finally:
        server.stop()
    return kept, plain, f"  [kept: {answered}, baseline: {len(items)} items in pages]"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        caldav_kept, caldav_plain, plain_methods = _caldav(work)
        ics_kept, ics_plain, ics_detail = _ics(work)
        github_kept, github_plain, github_detail = _github(work)
    print("requests per nothing-moved recheck (kept between ticks vs nothing kept):")
    rows = [
        ("CalDAV (Radicale)", caldav_kept, caldav_plain, f"  [{' '.join(plain_methods)}]"),
        (".ics URL", ics_kept, ics_plain, ics_detail),
        ("GitHub listing", github_kept, github_plain, github_detail),
    ]
    for label, kept, plain, detail in rows:
        print(f"{label:>18}: {kept} requests, baseline {plain} requests{detail}")


if __name__ == "__main__":
    main()
