"""The capability protocols: windows, call checks, fetched results and fingerprints."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from heinzel.capabilities.errors import CapabilityError
from heinzel.capabilities.protocols import Fetched, MethodSpec, Window, check_call, fetched
from heinzel.fingerprint import facet_fingerprints, fingerprint, whole_fingerprint

NOW = datetime(2026, 10, 30, 14, 0, tzinfo=UTC)


class _Source:
    """A read capability with one search method and one plain method."""

    name = "demo"
    methods: Mapping[str, MethodSpec] = {
        "search": MethodSpec(
            "search", window=True, args=frozenset({"q", "n"}), required=frozenset({"q"})
        ),
        "plain": MethodSpec("plain", window=False),
    }

    def fetch(
        self, method: str, args: Mapping[str, Any], window: Window | None, *, now: datetime
    ) -> Fetched:
        check_call(self, method, args, window)
        return fetched([], {"items": []}, cursor=None, now=now)


class TestWindow:
    def test_ending_at_is_the_span_before_now(self) -> None:
        """A 7d window seen on Friday starts the Friday before."""
        window = Window.ending_at(NOW, timedelta(days=7))
        assert window == Window(datetime(2026, 10, 23, 14, 0, tzinfo=UTC), NOW)

    def test_start_is_included_and_end_excluded(self) -> None:
        """The window is half-open, so consecutive weeks never share a record."""
        window = Window.ending_at(NOW, timedelta(days=7))
        assert window.contains(window.start)
        assert not window.contains(window.end)
        assert window.to_json() == {
            "start": "2026-10-23T14:00:00.000Z",
            "end": "2026-10-30T14:00:00.000Z",
        }


class TestCheckCall:
    def test_a_valid_call_returns_the_spec(self) -> None:
        """A known method with its required args and a window passes."""
        spec = check_call(_Source(), "search", {"q": "x"}, Window.ending_at(NOW, timedelta(days=1)))
        assert spec.name == "search"

    def test_unknown_method_is_hzh101(self) -> None:
        """The error names the methods on offer."""
        with pytest.raises(CapabilityError) as caught:
            check_call(_Source(), "nope", {}, None)
        assert caught.value.code == "HZH101"
        assert "plain, search" in caught.value.hint

    @pytest.mark.parametrize("args", [{"q": "x", "zz": 1}, {"n": 2}])
    def test_unknown_or_missing_args_are_hzh102(self, args: dict[str, Any]) -> None:
        """An arg the method does not accept, or a required one left out, is refused."""
        with pytest.raises(CapabilityError) as caught:
            check_call(_Source(), "search", args, Window.ending_at(NOW, timedelta(days=1)))
        assert caught.value.code == "HZH102"

    def test_window_missing_or_extra_is_hzh103(self) -> None:
        """A search method needs a window and a plain one refuses it."""
        with pytest.raises(CapabilityError) as missing:
            check_call(_Source(), "search", {"q": "x"}, None)
        with pytest.raises(CapabilityError) as extra:
            check_call(_Source(), "plain", {}, Window.ending_at(NOW, timedelta(days=1)))
        assert (missing.value.code, extra.value.code) == ("HZH103", "HZH103")


class TestFingerprints:
    def test_fingerprint_is_sha256_of_canonical_json(self) -> None:
        """Key order and spacing do not matter; non-ASCII is hashed as UTF-8."""
        expected = hashlib.sha256('{"a":1,"b":"ü"}'.encode()).hexdigest()
        assert fingerprint({"b": "ü", "a": 1}) == expected

    def test_whole_moves_exactly_when_a_facet_moves(self) -> None:
        """The whole-map hash changes with any facet and only then."""
        one = facet_fingerprints({"items": [1], "ids": [1]})
        same = facet_fingerprints({"ids": [1], "items": [1]})
        other = facet_fingerprints({"items": [2], "ids": [1]})
        assert whole_fingerprint(one) == whole_fingerprint(same)
        assert whole_fingerprint(one) != whole_fingerprint(other)
        assert one["ids"] == other["ids"]


class TestFetched:
    def test_round_trips_through_json(self) -> None:
        """What the cache stores reads back equal."""
        original = fetched({"x": [1, "ü"]}, {"x": [1, "ü"]}, cursor="c1", now=NOW)
        assert Fetched.from_json(original.to_json()) == original
        assert original.as_of == "2026-10-30T14:00:00.000Z"

    def test_a_bad_shape_is_refused(self) -> None:
        """Fingerprints that are not strings make from_json raise."""
        bad = {
            "result": 1,
            "fingerprints": {"a": 1},
            "cursor": None,
            "as_of": "2026-10-30T14:00:00Z",
        }
        with pytest.raises(TypeError):
            Fetched.from_json(bad)
