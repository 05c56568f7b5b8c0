"""The content guard: no content, no email address, only short declared texts."""

from __future__ import annotations

import enum
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ledger.errors import LedgerError
from ledger.guard import MAX_PLAIN, MAX_SHORT_TEXT, checked_data, looks_like_email
from ledger.spine import Spine


def clock() -> datetime:
    return datetime(2026, 10, 30, 15, 0, tzinfo=UTC)


def code_of(data: Any, short_text: tuple[str, ...] = ()) -> str:
    with pytest.raises(LedgerError) as caught:
        checked_data(data, short_text)
    return caught.value.code


class TestForbiddenFields:
    @pytest.mark.parametrize(
        "name", ["text", "draft", "transcript", "body", "content", "prompt", "messages", "Text"]
    )
    def test_refused_at_the_top(self, name: str) -> None:
        """A field with a content name is HZL020 whatever it holds."""
        assert code_of({name: 1}) == "HZL020"

    def test_refused_at_depth_inside_lists(self, name: str = "draft") -> None:
        """Nesting and lists do not hide a content field."""
        assert code_of({"a": [{"b": {"c": [1, {name: None}]}}]}) == "HZL020"

    def test_declaring_short_text_does_not_allow_a_content_name(self) -> None:
        """short_text never whitelists a content field."""
        assert code_of({"text": "hi"}, ("text",)) == "HZL020"


class TestEmails:
    @pytest.mark.parametrize(
        "value",
        ["priya@acme.com", "Mail Priya.K+x@mail.acme.co.uk now", "<a@b.io>"],
    )
    def test_addresses_are_refused_at_depth(self, value: str) -> None:
        """An email address anywhere is HZL021."""
        assert code_of({"who": [{"deep": value}]}) == "HZL021"

    def test_an_address_as_a_key_is_refused(self) -> None:
        """Keys are strings too."""
        assert code_of({"shares": {"priya@acme.com": 0.2}}) == "HZL021"

    @pytest.mark.parametrize(
        "value",
        [
            "hz-01J9Z@2026-10-30T15:00",
            "hz-01J@v1@2026-10-30T15:00@doc:checkout/weekly-report",
            "sha256:abc@def",
            "@priya",
        ],
    )
    def test_keys_and_handles_are_not_addresses(self, value: str) -> None:
        """Idempotency keys and roster handles with '@' pass."""
        assert not looks_like_email(value)
        assert checked_data({"key": value}) == {"key": value}


class TestLengths:
    def test_a_long_plain_string_is_refused(self) -> None:
        """More than MAX_PLAIN characters in an undeclared field is HZL022."""
        assert code_of({"note": "x" * (MAX_PLAIN + 1)}) == "HZL022"

    def test_a_declared_short_text_may_be_longer(self) -> None:
        """A declared field holds up to MAX_SHORT_TEXT, in lists too."""
        sentence = "y" * MAX_SHORT_TEXT
        assert checked_data({"lessons": [sentence]}, ("lessons",)) == {"lessons": [sentence]}

    def test_a_declared_short_text_is_capped(self) -> None:
        """Beyond MAX_SHORT_TEXT even a declared field is HZL022."""
        assert code_of({"question": "z" * (MAX_SHORT_TEXT + 1)}, ("question",)) == "HZL022"

    def test_declaration_applies_by_field_name_at_depth(self) -> None:
        """The nearest key above a string decides."""
        long = "w" * (MAX_PLAIN + 1)
        assert checked_data({"a": {"report": long}}, ("report",)) == {"a": {"report": long}}
        assert code_of({"report": {"a": long}}, ("report",)) == "HZL022"


class TestJsonOnly:
    @pytest.mark.parametrize(
        "data", [{"x": math.nan}, {"x": math.inf}, {"x": b"raw"}, {"x": {1, 2}}, {1: "a"}, [1]]
    )
    def test_non_json_is_refused(self, data: Any) -> None:
        """NaN, bytes, sets, non-string keys, a non-object: HZL023."""
        assert code_of(data) == "HZL023"

    def test_enum_members_are_recorded_as_plain_values(self) -> None:
        """A StrEnum or IntEnum member becomes its plain str or int."""

        class Disposition(enum.StrEnum):
            DRAFTED = "drafted"

        class Level(enum.IntEnum):
            HIGH = 3

        copy = checked_data({"d": Disposition.DRAFTED, "l": [Level.HIGH]})
        assert copy == {"d": "drafted", "l": [3]}
        assert (type(copy["d"]), type(copy["l"][0])) == (str, int)

    def test_the_copy_is_plain_json(self) -> None:
        """Tuples become lists so an appended event equals the one read back."""
        assert checked_data({"a": (1, "b", None, True, 1.5)}) == {"a": [1, "b", None, True, 1.5]}


class TestKeysCheckedOnce:
    def test_a_passed_key_does_not_let_a_non_string_key_through(self) -> None:
        """A key remembered as checked still refuses a StrEnum key that equals it (HZL023)."""

        class Field(enum.StrEnum):
            STATUS = "status"

        assert checked_data({"status": "ok"}) == {"status": "ok"}
        assert code_of({Field.STATUS: "ok"}) == "HZL023"

    def test_a_passed_key_still_has_its_values_checked(self) -> None:
        """Remembering a key skips only the key's own checks, never its value's."""
        assert checked_data({"note": "short"}) == {"note": "short"}
        assert code_of({"note": "x" * (MAX_PLAIN + 1)}) == "HZL022"
        assert code_of({"note": "write to ana@example.com"}) == "HZL021"
        assert code_of({"note": {"content": 1}}) == "HZL020"


class TestSpineRefusal:
    def test_nothing_is_written_when_the_guard_refuses(self, tmp_path: Path) -> None:
        """A refused append leaves the file and the chain as they were."""
        with Spine.open(tmp_path, clock=clock) as spine:
            spine.append("a.b", {"n": 1})
            before = spine.path.read_bytes()
            with pytest.raises(LedgerError) as caught:
                spine.append("draft.placed", {"meta": {"draft": "Dear Priya"}})
            after = spine.append("a.b", {"n": 2})
        assert (caught.value.code, after.seq) == ("HZL020", 2)
        assert spine.path.read_bytes().startswith(before)

    @pytest.mark.parametrize(("turn", "key"), [("t@acme.com", None), (None, "priya@acme.com")])
    def test_turn_and_key_carry_no_address(self, tmp_path: Path, turn: Any, key: Any) -> None:
        """The envelope's own strings are guarded too."""
        with Spine.open(tmp_path, clock=clock) as spine, pytest.raises(LedgerError) as caught:
            spine.append("a.b", turn=turn, key=key)
        assert caught.value.code == "HZL021"

    @pytest.mark.parametrize("bad", ["t@acme.com", "t\n2", "", 7])
    def test_a_turn_checked_once_lets_no_other_through(self, tmp_path: Path, bad: Any) -> None:
        """A turn id the spine remembers as checked (its lines skip the check) does not let
        an address, a second line, an empty id or a number through after it."""
        with Spine.open(tmp_path, clock=clock) as spine:
            spine.append("a.b", turn="t1")
            spine.append("a.b", turn="t1")
            with pytest.raises(LedgerError) as caught:
                spine.append("a.b", turn=bad)
        assert caught.value.code in ("HZL021", "HZL024")
