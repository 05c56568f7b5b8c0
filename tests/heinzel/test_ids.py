"""Identity: ids minted from the injected clock, and name slugs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from heinzel.errors import HeinzelError
from heinzel.ids import IdMinter, id_time, ids_among, is_id, is_slug, new_id, validate_name

FRIDAY = datetime(2026, 10, 30, 15, 0, tzinfo=UTC)


class TestNewId:
    def test_shape_is_hz_and_a_ulid(self) -> None:
        """hz- and 26 characters of Crockford base32."""
        minted = new_id(lambda: FRIDAY)
        assert minted.startswith("hz-") and len(minted) == 29
        assert is_id(minted)

    def test_time_comes_from_the_clock(self) -> None:
        """The ULID's timestamp is the injected clock's, not the wall clock's."""
        later = FRIDAY + timedelta(days=400)
        assert id_time(IdMinter().mint(lambda: later)) == later

    def test_ids_in_one_millisecond_sort_and_never_collide(self) -> None:
        """A thousand ids at one fixed moment are distinct and in minting order."""
        minter = IdMinter()
        ids = [minter.mint(lambda: FRIDAY) for _ in range(1000)]
        assert len(set(ids)) == 1000
        assert ids == sorted(ids)

    def test_a_clock_stepping_back_still_sorts(self) -> None:
        """An earlier clock reading still mints an id after the last one."""
        minter = IdMinter()
        first = minter.mint(lambda: FRIDAY + timedelta(days=1))
        second = minter.mint(lambda: FRIDAY)
        assert second > first
        assert id_time(second) == FRIDAY + timedelta(days=1)

    def test_a_naive_clock_is_refused(self) -> None:
        """A clock without a time zone is a coded error."""
        with pytest.raises(HeinzelError) as refused:
            new_id(lambda: datetime(2026, 1, 1))
        assert refused.value.code == "HZH002"


class TestIsId:
    @pytest.mark.parametrize(
        "text",
        ["", "hz-", "01J0000000000000000000000", "hz-01j00000000000000000000000", "hz-" + "U" * 26],
    )
    def test_non_ids(self, text: str) -> None:
        """Wrong prefix, length, case or alphabet is not an id."""
        assert not is_id(text)

    def test_id_time_refuses_a_non_id(self) -> None:
        """id_time on anything but an id is HZH003."""
        with pytest.raises(HeinzelError) as refused:
            id_time("weekly-report")
        assert refused.value.code == "HZH003"


class TestNames:
    @pytest.mark.parametrize("name", ["weekly-report", "a", "report2", "q3-okr-review"])
    def test_slugs_are_valid(self, name: str) -> None:
        """Lowercase words joined by single hyphens."""
        assert validate_name(name) == name

    @pytest.mark.parametrize(
        "name", ["", "Weekly", "weekly_report", "-x", "x-", "a--b", "2fa", "a b", "x" * 65]
    )
    def test_non_slugs_are_refused(self, name: str) -> None:
        """Anything else is HZH001 with a hint."""
        assert not is_slug(name)
        with pytest.raises(HeinzelError) as refused:
            validate_name(name)
        assert refused.value.code == "HZH001"
        assert refused.value.hint


def test_the_ids_among_a_folders_names_are_those_is_id_takes() -> None:
    """`ids_among` (one regex over a listing of ``heinzel/``) keeps exactly the names
    `is_id` keeps, in their order: none that only holds an id after a newline or around
    other text, none with a letter Crockford's base32 leaves out."""
    good = "hz-01M5VQ08M0WXZVBYWMQGYCBVHZ"
    names = [
        good,
        f"x\n{good}",
        f"{good}\n",
        f"{good}x",
        f"a{good}",
        good[:-1] + "I",
        good[:-1] + "0",
        "index.sqlite",
        "",
        good.lower(),
    ]
    assert ids_among(names) == [n for n in names if is_id(n)] == [good, good[:-1] + "0"]
    assert ids_among([]) == []
