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

Polling is cheap: what was read is kept under the adapter's cache folder
(``<home>/heinzel/http/calendar``), cut to what expansion needs (the events' times,
recurrence rules and exceptions, title, location, description cut as the record is, the
status, and only the configured attendee's answer: no other address), one file per
calendar. A CalDAV recheck asks the calendar collection's ``getctag`` and ``sync-token``
first (one ``PROPFIND``, depth 0) and, when neither moved and the kept events cover the
window, expands the kept ones without a ``REPORT``; an ``.ics`` URL is fetched with
``If-None-Match`` / ``If-Modified-Since`` from the last answer's ``ETag`` /
``Last-Modified``, and a ``304`` reuses the kept events.

Errors: unreachable or timed out `HZH170` (retryable); not iCalendar, or an event that
can't be read or expanded (a bad ``RRULE``, a ``DTSTART`` that is not a time) `HZH171`;
refused credentials or no such calendar `HZH172`. The password is read from the variable
``password_env`` names, and is never in an error.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Any

import httpx
import icalendar
import recurring_ical_events

from heinzel.capabilities.errors import CapabilityError
from heinzel.capabilities.protocols import Fetched, MethodSpec, Window, check_call, fetched
from ledger.event import format_ts, parse_ts
from ledger.files import ensure_private_dir, write_atomic

__all__ = ["CalDAVCalendar", "ICSCalendar", "calendar_adapter", "expand_events"]

_METHODS: Mapping[str, MethodSpec] = MappingProxyType(
    {"events": MethodSpec("events", window=True, args=frozenset({"calendar", "query"}))}
)
_TEXT = 4000
_AHEAD = timedelta(days=31)
"""How far past the window's end a CalDAV ``REPORT`` reads, so later windows reuse it."""
_KEEP = frozenset(
    {
        "UID",
        "DTSTART",
        "DTEND",
        "DURATION",
        "RRULE",
        "RDATE",
        "EXDATE",
        "EXRULE",
        "RECURRENCE-ID",
        "SEQUENCE",
        "SUMMARY",
        "DESCRIPTION",
        "LOCATION",
        "STATUS",
    }
)
"""The event properties expansion and the records need (and the attendee's answer)."""
_AUTH_TYPES = {"HTTPBasicAuth": "basic", "HTTPDigestAuth": "digest", "HTTPBearerAuth": "bearer"}
"""The scheme a server asked for, by the class of the caldav client's auth object."""
_CTAG = "{http://calendarserver.org/ns/}getctag"
_SYNC_TOKEN = "{DAV:}sync-token"  # noqa: S105 (a property name, not a secret)
_PROPFIND_TAGS = (
    '<?xml version="1.0" encoding="utf-8"?>'
    '<d:propfind xmlns:d="DAV:" xmlns:cs="http://calendarserver.org/ns/">'
    "<d:prop><cs:getctag/><d:sync-token/></d:prop></d:propfind>"
)


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
    calendar: Any,
    window: Window,
    *,
    attendee: str | None = None,
    query: str = "",
    where: str = "the calendar",
) -> list[dict[str, Any]]:
    """The occurrences of ``calendar``'s events inside ``window``, as records; an event
    that can't be read or expanded is `HZH171` naming ``where``, never another exception."""
    try:
        return _expand(calendar, window, attendee=attendee, query=query)
    except Exception as exc:  # a bad RRULE or DTSTART is the calendar's failure, coded
        raise CapabilityError(
            "HZH171",
            f"calendar: {where} has an event hz can't read: {type(exc).__name__}: {str(exc)[:200]}",
            "fix or remove that event (its RRULE, DTSTART or DTEND) in the calendar; "
            "only the inputs that read this calendar wait for it",
        ) from None


def _expand(
    calendar: Any, window: Window, *, attendee: str | None, query: str
) -> list[dict[str, Any]]:
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


def _slim(calendars: list[Any], attendee: str | None) -> str:
    """One VCALENDAR holding only what expansion needs: time zones, and each event's
    `_KEEP` properties and the configured attendee's answer (no other address, no
    alarm, no organizer); what the adapter keeps on disk."""
    wanted = (attendee or "").casefold().removeprefix("mailto:")
    out = icalendar.Calendar()
    out.add("PRODID", "-//hz//kept calendar//EN")
    out.add("VERSION", "2.0")
    for calendar in calendars:
        for zone in calendar.walk("VTIMEZONE"):
            out.add_component(zone)
        for event in calendar.walk("VEVENT"):
            kept = icalendar.Event()
            for name, value in event.property_items(recursive=False):
                if name == "ATTENDEE":
                    address = str(value).casefold().removeprefix("mailto:")
                    if not wanted or address != wanted:
                        continue
                elif name not in _KEEP:
                    continue
                cut = icalendar.vText(str(value)[:_TEXT]) if name == "DESCRIPTION" else value
                kept.add(name, cut, encode=False)
            out.add_component(kept)
    return str(out.to_ical().decode("utf-8"))


class _Kept:
    """What an adapter keeps between ticks, one private JSON file per calendar."""

    def __init__(self, directory: Path | None) -> None:
        self._directory = directory

    @staticmethod
    def key(*parts: Any) -> str:
        return hashlib.sha256(json.dumps(parts).encode("utf-8")).hexdigest()

    def load(self, key: str) -> dict[str, Any] | None:
        if self._directory is None:
            return None
        try:
            data = json.loads((self._directory / f"{key}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) and isinstance(data.get("ics"), str) else None

    def store(self, key: str, data: Mapping[str, Any]) -> None:
        if self._directory is None:
            return
        ensure_private_dir(self._directory)
        text = json.dumps(dict(data), sort_keys=True, ensure_ascii=False)
        write_atomic(self._directory / f"{key}.json", text.encode("utf-8"))


class _Calendar:
    def __init__(self, attendee: str | None, cache_dir: Path | None = None) -> None:
        self._attendee = attendee
        self._kept = _Kept(cache_dir)
        self.requests = 0

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
        for calendar, where in self._calendars(args.get("calendar"), window):
            records += expand_events(
                calendar,
                window,
                attendee=self._attendee,
                query=str(args.get("query") or ""),
                where=where,
            )
        records.sort(key=lambda r: (r["start"], r["id"]))
        ids = [r["id"] for r in records]
        return fetched(records, {"items": records, "ids": ids}, cursor=None, now=now)

    def _calendars(self, name: Any, window: Window) -> list[tuple[Any, str]]:
        """The calendars to expand, each with how an error names it."""
        raise NotImplementedError


class ICSCalendar(_Calendar):
    """An iCalendar file (``path``) or an ``https`` URL (``url``, read conditionally)."""

    def __init__(
        self,
        *,
        path: Path | None = None,
        url: str | None = None,
        cache_dir: Path | None = None,
        **kw: Any,
    ) -> None:
        super().__init__(kw.get("attendee"), cache_dir)
        self._path = path
        self._url = url

    def _calendars(self, name: Any, window: Window) -> list[tuple[Any, str]]:
        if self._path is not None:
            path = self._path.expanduser()
            try:
                return [(_parse(path.read_bytes(), str(path)), str(path))]
            except OSError as exc:
                raise CapabilityError(
                    "HZH170", f"calendar: can't read {path}: {exc.strerror}", "check the path"
                ) from None
        assert self._url is not None
        where = self._url.split("?", 1)[0]
        key = _Kept.key("ics", self._url, self._attendee)
        kept = self._kept.load(key)
        headers = {}
        if kept is not None and kept.get("etag"):
            headers["If-None-Match"] = str(kept["etag"])
        if kept is not None and kept.get("last_modified"):
            headers["If-Modified-Since"] = str(kept["last_modified"])
        self.requests += 1
        try:
            response = httpx.get(self._url, headers=headers, timeout=30, follow_redirects=True)
        except httpx.HTTPError as exc:
            raise CapabilityError(
                "HZH170",
                f"calendar: {where} did not answer: {type(exc).__name__}",
                "check the URL and the network; the next tick tries again",
                retryable=True,
            ) from None
        if response.status_code == 304 and kept is not None:
            return [(_parse(kept["ics"], where), where)]
        if response.status_code >= 400:
            raise CapabilityError(
                "HZH172",
                f"calendar: {where} answered {response.status_code}",
                "check the calendar's URL (a private address may have been reset)",
            )
        calendar = _parse(response.content, where)
        expand_events(calendar, window, where=where)  # a bad event fails before it is kept
        etag, modified = response.headers.get("etag"), response.headers.get("last-modified")
        if etag or modified:
            ics = _slim([calendar], self._attendee)
            self._kept.store(key, {"etag": etag, "last_modified": modified, "ics": ics})
        return [(calendar, where)]


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
        cache_dir: Path | None = None,
    ) -> None:
        super().__init__(attendee, cache_dir)
        self._url = url
        self._username = username
        self._password = password
        self._calendar = calendar

    def _client(self, auth_type: str | None = None) -> Any:
        """A client; with the ``auth_type`` the server asked for before (kept), the
        credentials go with the first request instead of after a ``401``."""
        import caldav

        dav: Any = caldav
        return dav.DAVClient(
            url=self._url,
            username=self._username,
            password=self._password,
            timeout=30,
            auth_type=auth_type if self._password else None,
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

    def _calendars(self, name: Any, window: Window) -> list[tuple[Any, str]]:
        """The chosen calendar's events: the kept ones when its ``getctag`` and
        ``sync-token`` did not move and they cover ``window`` (one ``PROPFIND``), else
        one ``REPORT`` from the window's start to `_AHEAD` past its end."""
        from caldav.lib.error import AuthorizationError, DAVError, NotFoundError

        wanted = str(name) if name else self._calendar
        key = _Kept.key("caldav", self._url, self._username, wanted, self._attendee)
        kept = self._kept.load(key)
        known = kept.get("auth_type") if kept is not None else None
        try:
            client = self._client(known if known in _AUTH_TYPES.values() else None)
            chosen = None
            tags: tuple[str | None, str | None] = (None, None)
            if kept is not None and isinstance(kept.get("href"), str):
                try:
                    chosen = client.calendar(url=kept["href"])
                    tags = self._tags(client, kept["href"])
                except NotFoundError:
                    chosen, kept = None, None  # gone or moved: look it up again
            if kept is not None and chosen is not None and _unmoved(kept, tags, window):
                return [(_parse(kept["ics"], self._url), self._url)]
            if chosen is None:
                chosen = self._choose(client, wanted)
                tags = self._tags(client, str(chosen.url))
            end = window.end + _AHEAD
            found = chosen.search(start=window.start, end=end, event=True)
        except (AuthorizationError, NotFoundError) as exc:
            raise self._refused(exc) from None
        except (DAVError, OSError, httpx.HTTPError) as exc:
            raise self._unreachable(exc) from None
        merged = icalendar.Calendar()
        for item in found:
            parsed = _parse(item.data, self._url)
            for component in parsed.walk("VEVENT"):
                merged.add_component(component)
            for zone in parsed.walk("VTIMEZONE"):
                merged.add_component(zone)
        expand_events(merged, window, where=self._url)  # a bad event fails before it is kept
        if any(tags):
            self._kept.store(
                key,
                {
                    "href": str(chosen.url),
                    "auth_type": _AUTH_TYPES.get(type(getattr(client, "auth", None)).__name__),
                    "ctag": tags[0],
                    "sync_token": tags[1],
                    "start": format_ts(window.start),
                    "end": format_ts(end),
                    "ics": _slim([merged], self._attendee),
                },
            )
        return [(merged, self._url)]

    def _choose(self, client: Any, wanted: str | None) -> Any:
        calendars: list[Any] = list(client.principal().calendars())
        chosen = [c for c in calendars if wanted is None or c.get_display_name() == wanted]
        if not chosen:
            raise CapabilityError(
                "HZH172",
                f"calendar: no calendar {wanted!r} at {self._url}",
                "name one of: " + ", ".join(str(c.get_display_name()) for c in calendars),
            )
        return chosen[0]

    def _tags(self, client: Any, href: str) -> tuple[str | None, str | None]:
        """The collection's ``getctag`` and ``sync-token`` (one ``PROPFIND``, depth 0)."""
        from caldav.lib.error import NotFoundError

        self.requests += 1
        response = client.propfind(href, _PROPFIND_TAGS, depth=0)
        if response.status == 404:
            raise NotFoundError(href)
        values: dict[str, str | None] = {_CTAG: None, _SYNC_TOKEN: None}
        tree = getattr(response, "tree", None)
        for element in tree.iter() if tree is not None else ():
            if element.tag in values and (element.text or "").strip():
                values[element.tag] = element.text.strip()
        return values[_CTAG], values[_SYNC_TOKEN]


def _unmoved(kept: Mapping[str, Any], tags: tuple[str | None, str | None], window: Window) -> bool:
    """Whether the kept events still answer: a tag the server gave is unchanged, and
    the window lies inside what was read."""
    if not any(tags) or (kept.get("ctag"), kept.get("sync_token")) != tags:
        return False
    try:
        start, end = parse_ts(str(kept["start"])), parse_ts(str(kept["end"]))
    except (KeyError, ValueError):
        return False
    return start <= window.start and window.end <= end


def calendar_adapter(
    table: Any, *, password: str | None = None, cache_dir: Path | None = None
) -> _Calendar:
    """The calendar a ``caldav`` or ``ics`` table (`heinzel.capabilities.configured`) names,
    keeping what it read in ``cache_dir``; ``password`` is the CalDAV password the table's
    secret resolves to (`heinzel.capabilities.configured.secret_origin`)."""
    attendee = getattr(table, "attendee", None)
    if table.backend == "ics":
        return ICSCalendar(path=table.path, url=table.url, attendee=attendee, cache_dir=cache_dir)
    return CalDAVCalendar(
        table.url,
        username=table.username,
        password=password,
        calendar=table.calendar,
        attendee=attendee,
        cache_dir=cache_dir,
    )
