"""Polling costs one request when nothing moved, counted by the servers themselves: a real
Radicale's request log for CalDAV (``getctag``/``sync-token`` first, no ``REPORT``), a
loopback web server for an ``.ics`` URL (``If-None-Match``, ``304``); and what the
adapters keep for that holds no address but the user's."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest

from heinzel.capabilities.calendars import CalDAVCalendar, ICSCalendar
from heinzel.capabilities.protocols import Window
from tests.adapters.ics_server import ICSServer
from tests.adapters.test_calendars import ICS, NOW, WEEK, free_port, per_uid

REQUEST = re.compile(r"\b(GET|PROPFIND|REPORT|PUT|MKCALENDAR|PROPPATCH|DELETE) request for")
OTHER = "mailto:someone-else@example.org"


@dataclass
class Radicale:
    url: str
    log: Path

    def requests(self) -> list[str]:
        """The methods Radicale logged, in order (each request is one INFO line)."""
        return REQUEST.findall(self.log.read_text("utf-8", "replace"))


@pytest.fixture
def radicale(tmp_path: Path) -> Iterator[Radicale]:
    port = free_port()
    users = tmp_path / "users"
    users.write_text("priya:s3cret\n")
    log = tmp_path / "radicale.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "radicale",
                "--server-hosts",
                f"127.0.0.1:{port}",
                "--storage-filesystem-folder",
                str(tmp_path / "collections"),
                "--auth-type",
                "htpasswd",
                "--auth-htpasswd-filename",
                str(users),
                "--auth-htpasswd-encryption",
                "plain",
                "--rights-type",
                "owner_only",
                "--logging-level",
                "info",
            ],
            stdout=out,
            stderr=out,
        )
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                if process.poll() is not None:
                    raise RuntimeError("radicale exited") from None
                subprocess.run(["sleep", "0.05"], check=True)  # polling for the port
        yield Radicale(f"http://127.0.0.1:{port}/priya/", log)
    finally:
        process.terminate()
        process.wait(timeout=10)


def invited(text: str) -> str:
    """``text`` with another person invited to the design review."""
    return text.replace(
        "ATTENDEE;PARTSTAT=ACCEPTED:mailto:priya@example.com",
        "ATTENDEE;PARTSTAT=ACCEPTED:mailto:priya@example.com\r\n"
        f"ATTENDEE;PARTSTAT=ACCEPTED:{OTHER}\r\nORGANIZER:{OTHER}",
    )


class TestCalDAV:
    def test_a_nothing_moved_recheck_is_one_propfind_and_a_change_is_read(
        self, radicale: Radicale, tmp_path: Path
    ) -> None:
        """The first fetch finds the calendar and reads it; a recheck an hour later where
        nothing moved is one PROPFIND (getctag, sync-token) and the same events; a saved
        event moves the tags and the next recheck reads it."""
        import caldav

        client = caldav.DAVClient(url=radicale.url, username="priya", password="s3cret")
        work = client.principal().make_calendar(name="work")
        for one in per_uid(invited(ICS)):
            work.save_event(one)
        cache = tmp_path / "http" / "calendar"
        source = CalDAVCalendar(
            radicale.url,
            username="priya",
            password="s3cret",
            attendee="priya@example.com",
            cache_dir=cache,
        )
        first = source.fetch("events", {"calendar": "work"}, WEEK, now=NOW)
        assert "REPORT" in radicale.requests()

        before = len(radicale.requests())
        later = NOW + timedelta(hours=1)
        again = source.fetch(
            "events", {"calendar": "work"}, Window.ending_at(later, timedelta(days=7)), now=later
        )
        assert radicale.requests()[before:] == ["PROPFIND"]
        assert [r["id"] for r in again.result] == [r["id"] for r in first.result]

        work.save_event(
            "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\nBEGIN:VEVENT\r\nUID:new\r\n"
            "SUMMARY:Retro\r\nDTSTART:20261029T150000Z\r\nDTEND:20261029T160000Z\r\n"
            "END:VEVENT\r\nEND:VCALENDAR\r\n"
        )
        before = len(radicale.requests())
        moved = source.fetch(
            "events", {"calendar": "work"}, Window.ending_at(later, timedelta(days=7)), now=later
        )
        assert radicale.requests()[before:] == ["PROPFIND", "REPORT"]
        assert "Retro" in [r["title"] for r in moved.result]
        kept = "".join(p.read_text() for p in cache.glob("*.json"))
        assert "someone-else@example.org" not in kept
        assert "Design review" in kept


@pytest.fixture
def published() -> Iterator[ICSServer]:
    server = ICSServer(invited(ICS)).start()
    yield server
    server.stop()


class TestICSURL:
    def test_a_recheck_is_a_conditional_get_answered_304(
        self, published: ICSServer, tmp_path: Path
    ) -> None:
        """The second fetch sends the ETag back, the server answers 304, and the events
        are the same; the kept calendar names no one but the configured attendee."""
        cache = tmp_path / "http" / "calendar"
        source = ICSCalendar(url=published.url, attendee="priya@example.com", cache_dir=cache)
        first = source.fetch("events", {}, WEEK, now=NOW)
        again = source.fetch("events", {}, WEEK, now=NOW + timedelta(minutes=5))
        assert [status for status, _ in published.seen] == [200, 304]
        assert published.seen[1][1] is not None  # If-None-Match carried the ETag
        assert again.result == first.result
        assert "Offsite" not in [r["title"] for r in again.result]  # declined, still known
        kept = "".join(p.read_text() for p in cache.glob("*.json"))
        assert "someone-else@example.org" not in kept
        assert "priya@example.com" in kept  # her own answer, to leave out what she declined
