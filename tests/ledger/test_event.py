"""The fixed line format of docs/spine.md."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.event import canonical, envelope_text, format_ts, make_event, parse_ts


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


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


_TRICKY: list[object] = [
    {"b": 1, "a": {"d": [1, 2.5, None], "c": True}},
    {"ü": 'ä\u2028\u2029\x00\x1f"\\/', "é": "\ud83d\ude00", "z": "\U0001f600"},
    {"": "", "A": "a", "a": "A", "10": 1, "9": 2, "_": -0.0},
    [1e16, 1e-7, 0.1, 2**64, -(2**63), 3.0, float(10**20)],
    "a plain string \u00e9",
    12,
    None,
    {"nested": {"deeper": {"deepest": [{"k": "v"}, [], {}]}}},
]


class TestTimestampText:
    @given(st.datetimes(timezones=st.timezones()))
    @settings(max_examples=300, deadline=None)
    def test_format_ts_writes_what_strftime_wrote(self, moment: datetime) -> None:
        """Any aware moment is written as strftime plus the milliseconds wrote it."""
        utc = moment.astimezone(UTC)
        old = utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"
        assert format_ts(moment) == old


class TestCanonical:
    @pytest.mark.parametrize("value", _TRICKY)
    def test_canonical_is_the_text_json_dumps_gives(self, value: object) -> None:
        """The prebuilt encoder writes byte for byte what json.dumps(sort_keys, compact,
        non-ASCII kept) writes, on keys that sort oddly, escapes, surrogates and numbers."""
        expected = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert canonical(value).encode("utf-8", "surrogatepass") == expected.encode(
            "utf-8", "surrogatepass"
        )

    @given(_JSON)
    @settings(max_examples=300, deadline=None)
    def test_canonical_agrees_with_json_dumps_on_any_json(self, value: object) -> None:
        """Any JSON value hypothesis builds serialises to the same text both ways."""
        expected = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert canonical(value) == expected

    def test_canonical_refuses_what_json_dumps_refuses(self) -> None:
        """Data that refers to itself and a value that is not JSON fail as json.dumps
        fails (ValueError, TypeError): the encoder made per call checks for cycles."""
        looped: list[object] = []
        looped.append(looped)
        with pytest.raises(ValueError, match="Circular"):
            canonical({"a": looped})
        with pytest.raises(TypeError):
            canonical({"a": object()})
        assert canonical({"a": [1]}) == '{"a":[1]}'


_LABEL = st.none() | st.text(max_size=12)


class TestEnvelopeText:
    @given(
        st.integers(min_value=1, max_value=2**40),
        st.text(max_size=30),
        _LABEL,
        _LABEL,
        st.text(min_size=1, max_size=20),
        _LABEL,
        st.dictionaries(st.text(max_size=8), _JSON, max_size=4),
    )
    @settings(max_examples=300, deadline=None)
    def test_envelope_text_is_the_canonical_envelope(
        self,
        seq: int,
        ts: str,
        prev: str | None,
        turn: str | None,
        kind: str,
        key: str | None,
        data: dict[str, object],
    ) -> None:
        """A spine append's envelope, written around the data's text, is byte for byte the
        canonical text of the envelope object (quotes, escapes, non-ASCII, nulls)."""
        envelope = {"v": 1, "seq": seq, "ts": ts, "prev": prev, "turn": turn}
        envelope.update(kind=kind, key=key, data=data)
        made = envelope_text(seq, ts, prev, turn=turn, kind=kind, key=key, data=data)
        assert made.encode("utf-8", "surrogatepass") == canonical(envelope).encode(
            "utf-8", "surrogatepass"
        )
