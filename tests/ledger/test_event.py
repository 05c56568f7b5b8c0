"""The fixed line format of docs/spine.md."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta, timezone

import pytest

from ledger.event import format_ts, make_event, parse_ts


class TestLine:
    def test_line_is_canonical_json_with_the_fixed_keys(self) -> None:
        """Keys sorted, no spaces, non-ASCII kept, one newline."""
        event = make_event(
            seq=1, ts="2026-10-30T15:00:00.000Z", prev=None, kind="x.y", data={"b": "ü", "a": 1}
        )
        assert (
            event.line()
            == (
                '{"data":{"a":1,"b":"ü"},"key":null,"kind":"x.y","prev":null,'
                '"seq":1,"ts":"2026-10-30T15:00:00.000Z","turn":null,"v":1}\n'
            ).encode()
        )

    def test_hash_is_sha256_of_the_line_without_newline(self) -> None:
        """The next line's prev is this digest."""
        event = make_event(seq=1, ts="2026-10-30T15:00:00.000Z", prev=None, kind="k", data={})
        assert event.hash == hashlib.sha256(event.line()[:-1]).hexdigest()


class TestTimestamps:
    def test_ts_is_utc_with_milliseconds_and_z(self) -> None:
        """An offset time is converted to UTC."""
        moment = datetime(2026, 10, 30, 16, 0, 0, 123456, tzinfo=timezone(timedelta(hours=1)))
        assert format_ts(moment) == "2026-10-30T15:00:00.123Z"
        assert parse_ts("2026-10-30T15:00:00.123Z") == datetime(
            2026, 10, 30, 15, 0, 0, 123000, tzinfo=UTC
        )

    def test_naive_time_is_refused(self) -> None:
        """A clock must be aware; a naive datetime is a programming error."""
        with pytest.raises(ValueError):
            format_ts(datetime(2026, 1, 1))
