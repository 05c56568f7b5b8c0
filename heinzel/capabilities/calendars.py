"""``calendar.events`` from a CalDAV server or an iCalendar (``.ics``) file or URL.

Both read VEVENTs and expand them with ``recurring-ical-events`` inside the window: a
recurring meeting gives one record per occurrence, its exceptions (a moved or cancelled
occurrence, ``RECURRENCE-ID`` / ``EXDATE``) applied; times with a ``TZID`` are honoured and
given in UTC; an all-day event starts at midnight UTC of its date. Left out: cancelled
events (``STATUS:CANCELLED``) and, when ``attendee`` is set (the user's address), events
that attendee declined (``PARTSTAT=DECLINED``). ``query`` is a case-insensitive
substring of the summary or description; ``calendar`` picks a CalDAV calendar by display
name (the configured one, else the first). Records ``{id, uid, title, start, end,
all_day, location, description}``, oldest first, ``id`` being ``<uid>@<start>``; the
description is cut at 4000 characters. Facets ``items`` and ``ids``.

Errors: unreachable or timed out `HZH170` (retryable); not iCalendar `HZH171`; refused
credentials or no such calendar `HZH172`. The password is read from the variable
``password_env`` names, and is never in an error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime, time
from pathlib import Path
from types import MappingProxyType
from typing import Any

import httpx
import icalendar
import recurring_ical_events

from heinzel.capabilities.errors import CapabilityError
from heinzel.capabilities.protocols import Fetched, MethodSpec, Window, check_call, fetched
from ledger.event import format_ts

__all__ = ["CalDAVCalendar", "ICSCalendar", "calendar_adapter", "expand_events"]

_METHODS: Mapping[str, MethodSpec] = MappingProxyType(
    {"events": MethodSpec("events", window=True, args=frozenset({"calendar", "query"}))}
)
_TEXT = 4000


def _utc(value: Any) -> datetime:
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC)
    if isinstance(value, date):
        return datetime.combine(value, time(0), tzinfo=UTC)
    raise ValueError(value)


def _declined(event: Any, attendee: str | None) -> bool:
    if not attendee:
        return False
    found = event.get("ATTENDEE")
    people = found if isinstance(found, list) else [found] if found is not None else []
    wanted = attendee.casefold().removeprefix("mailto:")
    for person in people:
        address = str(person).casefold().removeprefix("mailto:")
        if address == wanted and str(person.params.get("PARTSTAT", "")).upper() == "DECLINED":
            return True
    return False


def expand_events(
    calendar: Any, window: Window, *, attendee: str | None = None, query: str = ""
) -> list[dict[str, Any]]:
    """The occurrences of ``calendar``'s events inside ``window``, as records."""
    needle = query.casefold()
    records = []
    for event in recurring_ical_events.of(calendar).between(window.start, window.end):
        if str(event.get("STATUS", "")).upper() == "CANCELLED" or _declined(event, attendee):
            continue
        title = str(event.get("SUMMARY", ""))
        description = str(event.get("DESCRIPTION", ""))
        if needle not in f"{title} {description}".casefold():
            continue
        raw_start = event.decoded("DTSTART")
        start = _utc(raw_start)
        end = _utc(event.decoded("DTEND")) if event.get("DTEND") is not None else start
        uid = str(event.get("UID", ""))
        records.append(
            {
                "id": f"{uid}@{format_ts(start)}",
                "uid": uid,
                "title": title,
                "start": format_ts(start),
                "end": format_ts(end),
                "all_day": not isinstance(raw_start, datetime),
                "location": str(event.get("LOCATION", "")) or None,
                "description": description[:_TEXT],
            }
        )
    return sorted(records, key=lambda r: (r["start"], r["id"]))


def _parse(data: bytes | str, where: str) -> Any:
    try:
        return icalendar.Calendar.from_ical(data)
    except ValueError as exc:
        raise CapabilityError(
            "HZH171", f"calendar: {where} is not iCalendar: {exc}", "check the file or URL"
        ) from None


class _Calendar:
    def __init__(self, attendee: str | None) -> None:
        self._attendee = attendee

    @property
    def name(self) -> str:
        """``calendar``."""
        return "calendar"

    @property
    def methods(self) -> Mapping[str, MethodSpec]:
        """``events``, with a window."""
        return _METHODS

    def fetch(
        self, method: str, args: Mapping[str, Any], window: Window | None, *, now: datetime
    ) -> Fetched:
        """The events in ``window`` (recurrences expanded, declined ones left out)."""
        check_call(self, method, args, window)
        assert window is not None  # check_call refuses a search method without one
        records: list[dict[str, Any]] = []
        for calendar in self._calendars(args.get("calendar"), window):
            records += expand_events(
                calendar, window, attendee=self._attendee, query=str(args.get("query") or "")
            )
        records.sort(key=lambda r: (r["start"], r["id"]))
        ids = [r["id"] for r in records]
        return fetched(records, {"items": records, "ids": ids}, cursor=None, now=now)

    def _calendars(self, name: Any, window: Window) -> list[Any]:
        raise NotImplementedError


class ICSCalendar(_Calendar):
    """An iCalendar file (``path``) or an ``https`` URL (``url``)."""

    def __init__(self, *, path: Path | None = None, url: str | None = None, **kw: Any) -> None:
        super().__init__(kw.get("attendee"))
        self._path = path
        self._url = url

    def _calendars(self, name: Any, window: Window) -> list[Any]:
        if self._path is not None:
            path = self._path.expanduser()
            try:
                return [_parse(path.read_bytes(), str(path))]
            except OSError as exc:
                raise CapabilityError(
                    "HZH170", f"calendar: can't read {path}: {exc.strerror}", "check the path"
                ) from None
        assert self._url is not None
        try:
            response = httpx.get(self._url, timeout=30, follow_redirects=True)
        except httpx.HTTPError as exc:
            raise CapabilityError(
                "HZH170",
                f"calendar: {self._url.split('?', 1)[0]} did not answer: {type(exc).__name__}",
                "check the URL and the network; the next tick tries again",
                retryable=True,
            ) from None
        if response.status_code >= 400:
            raise CapabilityError(
                "HZH172",
                f"calendar: {self._url.split('?', 1)[0]} answered {response.status_code}",
                "check the calendar's URL (a private address may have been reset)",
            )
        return [_parse(response.content, self._url.split("?", 1)[0])]


class CalDAVCalendar(_Calendar):
    """A calendar on a CalDAV server (RFC 4791), read with the ``caldav`` client."""

    def __init__(
        self,
        url: str,
        *,
        username: str | None = None,
        password: str | None = None,
        calendar: str | None = None,
        attendee: str | None = None,
    ) -> None:
        super().__init__(attendee)
        self._url = url
        self._username = username
        self._password = password
        self._calendar = calendar

    def _client(self) -> Any:
        import caldav

        dav: Any = caldav
        return dav.DAVClient(
            url=self._url, username=self._username, password=self._password, timeout=30
        )

    def probe(self) -> str:
        """One request for ``hz system doctor --online``: the principal, coded as a fetch."""
        from caldav.lib.error import AuthorizationError, DAVError, NotFoundError

        try:
            self._client().principal()
        except (AuthorizationError, NotFoundError) as exc:
            raise self._refused(exc) from None
        except (DAVError, OSError, httpx.HTTPError) as exc:
            raise self._unreachable(exc) from None
        return f"{self._url} answered, principal found"

    def _refused(self, exc: Exception) -> CapabilityError:
        return CapabilityError(
            "HZH172",
            f"calendar: {self._url} refused: {type(exc).__name__}",
            "check url, username and the password (password_env, or hz system credential "
            "set caldav)",
        )

    def _unreachable(self, exc: Exception) -> CapabilityError:
        return CapabilityError(
            "HZH170",
            f"calendar: {self._url} did not answer: {type(exc).__name__}",
            "check the server and the network; the next tick tries again",
            retryable=True,
        )

    def _calendars(self, name: Any, window: Window) -> list[Any]:
        from caldav.lib.error import AuthorizationError, DAVError, NotFoundError

        wanted = str(name) if name else self._calendar
        try:
            calendars: list[Any] = list(self._client().principal().calendars())
            chosen = [c for c in calendars if wanted is None or c.get_display_name() == wanted]
            if not chosen:
                raise CapabilityError(
                    "HZH172",
                    f"calendar: no calendar {wanted!r} at {self._url}",
                    "name one of: " + ", ".join(str(c.get_display_name()) for c in calendars),
                )
            found = chosen[0].search(start=window.start, end=window.end, event=True)
        except (AuthorizationError, NotFoundError) as exc:
            raise self._refused(exc) from None
        except (DAVError, OSError, httpx.HTTPError) as exc:
            raise self._unreachable(exc) from None
        merged = icalendar.Calendar()
        for item in found:
            for component in _parse(item.data, self._url).walk("VEVENT"):
                merged.add_component(component)
            for zone in _parse(item.data, self._url).walk("VTIMEZONE"):
                merged.add_component(zone)
        return [merged]


def calendar_adapter(
    table: Any,
    environ: Mapping[str, str],
    stored: Callable[[str], str | None] | None = None,
) -> _Calendar:
    """The calendar a ``caldav`` or ``ics`` table (`heinzel.capabilities.configured`) names;
    the CalDAV password from ``password_env``, else the ``caldav`` credential hz stores."""
    attendee = getattr(table, "attendee", None)
    if table.backend == "ics":
        return ICSCalendar(path=table.path, url=table.url, attendee=attendee)
    password = environ.get(table.password_env) if table.password_env else None
    if not password and stored is not None:
        password = stored("caldav")
    return CalDAVCalendar(
        table.url,
        username=table.username,
        password=password,
        calendar=table.calendar,
        attendee=attendee,
    )
