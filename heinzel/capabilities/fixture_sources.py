"""File-backed sources for the worked example: a code host, a tracker, a calendar, a chat.

Each is a `FixtureSource` reading dated records from one JSONL file in a folder (the
shipped one is ``fixtures/priya/``) and answering one windowed method: the records whose
date lies in the window ending at the ``now`` it is given, so stepping the clock through
a week makes the inputs move as real sources would. Args filter records by equality on a
field of the same name; ``query`` is a case-insensitive substring of the title or text.
Records come oldest first. Facets: ``items`` (the records) and ``ids`` (their ids); the
cursor is the newest record's date in the window. They are test-only adapters in the
sense of ADR 0049's worked example: no network, no credentials, the same protocol as the
real ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

from heinzel.capabilities.errors import CapabilityError
from heinzel.capabilities.files import parse_content
from heinzel.capabilities.protocols import Fetched, MethodSpec, Window, check_call, fetched
from heinzel.capabilities.targets import Protected
from ledger.event import parse_ts
from ledger.records import frozen_record

__all__ = ["FixtureMethod", "FixtureSource", "fixture_sources"]


@frozen_record
class FixtureMethod:
    """One windowed method: its records' file, the field holding each record's date and
    the one holding its id, the args it accepts (``query`` searches ``text_fields``)."""

    spec: MethodSpec
    file: str
    at: str
    id: str
    text_fields: tuple[str, ...] = ("title",)


def _spec(name: str, args: set[str], required: set[str] | None = None) -> MethodSpec:
    return MethodSpec(name, window=True, args=frozenset(args), required=frozenset(required or ()))


class FixtureSource:
    """A read capability named ``name`` whose methods read dated records from ``folder``
    (never a file in hz's own places, ``protected``: HZH343)."""

    def __init__(
        self,
        name: str,
        folder: Path,
        methods: Mapping[str, FixtureMethod],
        protected: Protected | None = None,
    ) -> None:
        self._name = name
        self._folder = folder
        self._protected = protected or Protected()
        self._methods = dict(methods)
        self._specs = MappingProxyType({m: f.spec for m, f in self._methods.items()})

    @property
    def name(self) -> str:
        """The capability's name (``code-host``, ``tracker``, ``calendar``, ``chat``)."""
        return self._name

    @property
    def methods(self) -> Mapping[str, MethodSpec]:
        """Its windowed methods."""
        return self._specs

    def fetch(
        self, method: str, args: Mapping[str, Any], window: Window | None, *, now: datetime
    ) -> Fetched:
        """The records of ``method`` dated in ``window`` that match ``args``."""
        check_call(self, method, args, window)
        assert window is not None  # check_call refuses a search method without one
        how = self._methods[method]
        dated = [(self._date(record, how), record) for record in self._records(how)]
        picked = [
            (at, record)
            for at, record in dated
            if window.contains(at) and _matches(record, args, how.text_fields)
        ]
        picked.sort(key=lambda pair: pair[0])
        records = [record for _, record in picked]
        facets = {"items": records, "ids": [record.get(how.id) for record in records]}
        cursor = str(records[-1][how.at]) if records else None
        return fetched(records, facets, cursor=cursor, now=now)

    def _records(self, how: FixtureMethod) -> list[dict[str, Any]]:
        path = self._folder / how.file
        self._protected.check_read(path, f"{self._name}'s fixture {path}")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise CapabilityError(
                "HZH140",
                f"{self._name}: cannot read its fixture {path}: {error}",
                "point the fixture sources at a folder holding the example's files",
            ) from None
        records: list[dict[str, Any]] = []
        for number, record in enumerate(parse_content(text, ".jsonl", str(path)), start=1):
            if not isinstance(record, dict):
                raise CapabilityError(
                    "HZH140",
                    f"{path} record {number} is not an object",
                    "each line is a JSON object",
                )
            records.append(record)
        return records

    def _date(self, record: dict[str, Any], how: FixtureMethod) -> datetime:
        value = record.get(how.at)
        try:
            if not isinstance(value, str):
                raise ValueError(value)
            return parse_ts(value)
        except ValueError:
            raise CapabilityError(
                "HZH140",
                f"{self._name}: a record in {how.file} has no valid {how.at}: {value!r}",
                "write dates as 2026-10-30T14:00:00Z",
            ) from None


def _matches(record: dict[str, Any], args: Mapping[str, Any], text_fields: tuple[str, ...]) -> bool:
    for name, wanted in args.items():
        if name == "query":
            needle = str(wanted).casefold()
            haystack = " ".join(str(record.get(f, "")) for f in text_fields).casefold()
            if needle not in haystack:
                return False
        elif record.get(name) != wanted:
            return False
    return True


def fixture_sources(folder: Path, protected: Protected | None = None) -> dict[str, FixtureSource]:
    """The worked example's four sources over the files in ``folder``, by capability name;
    none reads a file that resolves into hz's own places (``protected``)."""
    return {
        "code-host": FixtureSource(
            "code-host",
            folder,
            {
                "merged_pull_requests": FixtureMethod(
                    _spec("merged_pull_requests", {"repo", "base"}, {"repo"}),
                    "code-host.jsonl",
                    at="merged_at",
                    id="number",
                )
            },
            protected,
        ),
        "tracker": FixtureSource(
            "tracker",
            folder,
            {
                "issues_updated": FixtureMethod(
                    _spec("issues_updated", {"project", "board", "query"}),
                    "tracker.jsonl",
                    at="updated_at",
                    id="key",
                )
            },
            protected,
        ),
        "calendar": FixtureSource(
            "calendar",
            folder,
            {
                "events": FixtureMethod(
                    _spec("events", {"calendar", "query"}), "calendar.jsonl", at="start", id="id"
                )
            },
            protected,
        ),
        "chat": FixtureSource(
            "chat",
            folder,
            {
                "messages": FixtureMethod(
                    _spec("messages", {"channel", "query"}, {"channel"}),
                    "chat.jsonl",
                    at="at",
                    id="id",
                    text_fields=("text",),
                )
            },
            protected,
        ),
    }
