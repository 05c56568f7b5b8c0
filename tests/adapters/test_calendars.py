"""calendar.events from .ics files and from a real CalDAV server (Radicale on loopback)."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from heinzel.capabilities.calendars import CalDAVCalendar, ICSCalendar
from heinzel.capabilities.configured import parse_adapter_tables
from heinzel.capabilities.errors import CapabilityError
from heinzel.capabilities.protocols import Window

NOW = datetime(2026, 10, 30, 15, 0, tzinfo=UTC)
WEEK = Window.ending_at(NOW, timedelta(days=7))

ICS = """BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//hz tests//EN
BEGIN:VTIMEZONE
TZID:Europe/Berlin
BEGIN:STANDARD
DTSTART:19701025T030000
RRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU
TZOFFSETFROM:+0200
TZOFFSETTO:+0100
END:STANDARD
BEGIN:DAYLIGHT
DTSTART:19700329T020000
RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU
TZOFFSETFROM:+0100
TZOFFSETTO:+0200
END:DAYLIGHT
END:VTIMEZONE
BEGIN:VEVENT
UID:standup
SUMMARY:Standup
DTSTART;TZID=Europe/Berlin:20261001T093000
DTEND;TZID=Europe/Berlin:20261001T094500
RRULE:FREQ=DAILY;BYDAY=MO,TU,WE,TH,FR
EXDATE;TZID=Europe/Berlin:20261028T093000
END:VEVENT
BEGIN:VEVENT
UID:standup
RECURRENCE-ID;TZID=Europe/Berlin:20261029T093000
SUMMARY:Standup (moved)
DTSTART;TZID=Europe/Berlin:20261029T110000
DTEND;TZID=Europe/Berlin:20261029T111500
END:VEVENT
BEGIN:VEVENT
UID:review
SUMMARY:Design review
DESCRIPTION:Decide the export format
DTSTART:20261027T130000Z
DTEND:20261027T140000Z
ATTENDEE;PARTSTAT=ACCEPTED:mailto:priya@example.com
END:VEVENT
BEGIN:VEVENT
UID:offsite
SUMMARY:Offsite
DTSTART:20261026T100000Z
DTEND:20261026T120000Z
ATTENDEE;PARTSTAT=DECLINED:mailto:priya@example.com
END:VEVENT
BEGIN:VEVENT
UID:cancelled
SUMMARY:Cancelled sync
STATUS:CANCELLED
DTSTART:20261028T100000Z
DTEND:20261028T110000Z
END:VEVENT
BEGIN:VEVENT
UID:holiday
SUMMARY:Team day
DTSTART;VALUE=DATE:20261030
DTEND;VALUE=DATE:20261031
END:VEVENT
END:VCALENDAR
"""


@pytest.fixture
def ics(tmp_path: Path) -> Path:
    path = tmp_path / "work.ics"
    path.write_text(ICS.replace("\n", "\r\n"))
    return path


class TestICS:
    def test_recurrences_exceptions_time_zones_and_declines(self, ics: Path) -> None:
        """Weekday standups expanded in eight days in Berlin time (winter time after Oct 25),
        the excluded day gone, the moved one moved, declined and cancelled left out."""
        eight_days = Window.ending_at(NOW, timedelta(days=8))
        got = ICSCalendar(path=ics, attendee="priya@example.com").fetch(
            "events", {}, eight_days, now=NOW
        )
        assert [(r["title"], r["start"]) for r in got.result] == [
            ("Standup", "2026-10-23T07:30:00.000Z"),  # summer time: +02:00
            ("Standup", "2026-10-26T08:30:00.000Z"),  # winter time: +01:00
            ("Standup", "2026-10-27T08:30:00.000Z"),
            ("Design review", "2026-10-27T13:00:00.000Z"),
            ("Standup (moved)", "2026-10-29T10:00:00.000Z"),
            ("Team day", "2026-10-30T00:00:00.000Z"),
            ("Standup", "2026-10-30T08:30:00.000Z"),
        ]
        assert got.result[5]["all_day"] is True
        assert len(set(got.fingerprints)) == 2

    def test_without_attendee_a_declined_event_stays_and_query_filters(self, ics: Path) -> None:
        """No attendee set: the offsite is there; query matches the description."""
        calendar = ICSCalendar(path=ics)
        titles = [r["title"] for r in calendar.fetch("events", {}, WEEK, now=NOW).result]
        assert "Offsite" in titles
        found = calendar.fetch("events", {"query": "EXPORT"}, WEEK, now=NOW).result
        assert [r["title"] for r in found] == ["Design review"]

    def test_bad_file_and_missing_file(self, tmp_path: Path) -> None:
        """Not iCalendar is HZH171; a missing file HZH170."""
        bad = tmp_path / "bad.ics"
        bad.write_text("hello")
        with pytest.raises(CapabilityError) as caught:
            ICSCalendar(path=bad).fetch("events", {}, WEEK, now=NOW)
        assert caught.value.code == "HZH171"
        with pytest.raises(CapabilityError) as caught:
            ICSCalendar(path=tmp_path / "none.ics").fetch("events", {}, WEEK, now=NOW)
        assert caught.value.code == "HZH170"

    @pytest.mark.parametrize(
        ("good", "bad"),
        [
            ("RRULE:FREQ=DAILY;BYDAY=MO,TU,WE,TH,FR", "RRULE:FREQ=SOMETIMES"),
            ("DTSTART:20261027T130000Z", "DTSTART:garbage"),
        ],
    )
    def test_an_event_that_cant_be_expanded_is_hzh171(self, ics: Path, good: str, bad: str) -> None:
        """An invite with a bad RRULE or DTSTART is HZH171 naming the file, never the
        library's ValueError."""
        text = ics.read_text()
        assert good in text
        ics.write_text(text.replace(good, bad, 1))
        with pytest.raises(CapabilityError) as caught:
            ICSCalendar(path=ics).fetch("events", {}, WEEK, now=NOW)
        assert caught.value.code == "HZH171"
        assert str(ics) in caught.value.message

    def test_ics_table_needs_one_source(self) -> None:
        """An ics table with neither path nor url is HZH015."""
        with pytest.raises(Exception) as caught:
            parse_adapter_tables({"calendar": {"backend": "ics"}})
        assert getattr(caught.value, "code", None) == "HZH015"


def per_uid(text: str) -> list[str]:
    """The calendar split into one object per UID (with the time zone), as CalDAV stores it."""
    import icalendar

    whole = icalendar.Calendar.from_ical(text)
    zones = whole.walk("VTIMEZONE")
    groups: dict[str, list[object]] = {}
    for event in whole.walk("VEVENT"):
        groups.setdefault(str(event["UID"]), []).append(event)
    out = []
    for events in groups.values():
        one = icalendar.Calendar()
        one.add("VERSION", "2.0")
        one.add("PRODID", "-//hz tests//EN")
        for component in [*zones, *events]:
            one.add_component(component)
        out.append(one.to_ical().decode())
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def radicale(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    users = tmp_path / "users"
    users.write_text("priya:s3cret\n")
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
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
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
        yield f"http://127.0.0.1:{port}/priya/"
    finally:
        process.terminate()
        process.wait(timeout=10)


class TestCalDAV:
    def test_radicale_events_expanded_and_declined_left_out(self, radicale: str) -> None:
        """Events saved through the caldav client come back expanded in the window."""
        import caldav

        client = caldav.DAVClient(url=radicale, username="priya", password="s3cret")
        work = client.principal().make_calendar(name="work")
        client.principal().make_calendar(name="home")
        for one in per_uid(ICS):
            work.save_event(one)
        source = CalDAVCalendar(
            radicale, username="priya", password="s3cret", attendee="priya@example.com"
        )
        got = source.fetch("events", {"calendar": "work"}, WEEK, now=NOW)
        titles = [r["title"] for r in got.result]
        assert titles.count("Standup") == 3  # 26, 27, 30 (28 excluded, 29 moved)
        assert "Standup (moved)" in titles
        assert "Offsite" not in titles
        assert "Cancelled sync" not in titles
        assert source.fetch("events", {"calendar": "home"}, WEEK, now=NOW).result == []

    def test_wrong_password_and_unknown_calendar(self, radicale: str) -> None:
        """A refused password and a calendar that is not there are HZH172."""
        import caldav

        caldav.DAVClient(
            url=radicale, username="priya", password="s3cret"
        ).principal().make_calendar(name="work")
        with pytest.raises(CapabilityError) as caught:
            CalDAVCalendar(radicale, username="priya", password="wrong").fetch(
                "events", {}, WEEK, now=NOW
            )
        assert caught.value.code == "HZH172"
        assert "wrong" not in str(caught.value)
        with pytest.raises(CapabilityError) as caught:
            CalDAVCalendar(radicale, username="priya", password="s3cret").fetch(
                "events", {"calendar": "nope"}, WEEK, now=NOW
            )
        assert caught.value.code == "HZH172"
