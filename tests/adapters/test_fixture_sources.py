"""The worked example's file-backed sources and contracts under fixtures/priya."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from heinzel.capabilities.errors import CapabilityError
from heinzel.capabilities.fixture_sources import fixture_sources
from heinzel.capabilities.protocols import Window, check_call

PRIYA = Path(__file__).resolve().parents[2] / "fixtures" / "priya"
FRIDAY_1 = datetime(2026, 10, 30, 14, 0, tzinfo=UTC)  # 15:00 in Berlin (CET)
FRIDAY_2 = datetime(2026, 11, 6, 14, 0, tzinfo=UTC)
WEEK = timedelta(days=7)


def fetch(capability: str, method: str, args: dict[str, Any], now: datetime) -> list[Any]:
    source = fixture_sources(PRIYA)[capability]
    got = source.fetch(method, args, Window.ending_at(now, WEEK), now=now)
    return [
        record[field]
        for record in got.result
        for field in ("number", "key", "id")
        if field in record
    ]


def frontmatter(name: str) -> dict[str, Any]:
    text = (PRIYA / name).read_text(encoding="utf-8")
    data = yaml.safe_load(text.split("---\n")[1])
    assert isinstance(data, dict)
    return data


class TestPriyaSources:
    def test_first_friday_sees_that_weeks_records(self) -> None:
        """Records before the window, after now, or of another repo/board/calendar are left out."""
        assert fetch("code-host", "merged_pull_requests", {"repo": "acme/checkout"}, FRIDAY_1) == [
            402,
            405,
            407,
        ]
        assert fetch("tracker", "issues_updated", {"project": "CHK"}, FRIDAY_1) == [
            "CHK-214",
            "CHK-220",
            "CHK-215",
            "CHK-223",
        ]
        assert fetch("calendar", "events", {"calendar": "priya"}, FRIDAY_1) == [
            "ev-1027-review",
            "ev-1029-payments",
            "ev-1030-demo",
        ]
        assert fetch("chat", "messages", {"channel": "#checkout-oncall"}, FRIDAY_1) == [
            "m-1027-1",
            "m-1027-2",
        ]

    def test_second_friday_sees_the_next_week(self) -> None:
        """The week after, including what landed on Friday after three."""
        assert fetch("code-host", "merged_pull_requests", {"repo": "acme/checkout"}, FRIDAY_2) == [
            409,
            411,
            414,
            416,
        ]
        assert fetch("chat", "messages", {"channel": "#checkout-oncall"}, FRIDAY_2) == [
            "m-1102-1",
            "m-1102-2",
            "m-1104-1",
        ]

    def test_inputs_move_as_the_clock_steps(self) -> None:
        """Wednesday 11:00 to 14:00: the code host moved (a merge at 13:15), the calendar not."""
        sources = fixture_sources(PRIYA)
        wed, thu = (
            datetime(2026, 11, 4, 11, 0, tzinfo=UTC),
            datetime(2026, 11, 4, 14, 0, tzinfo=UTC),
        )

        def whole(name: str, method: str, args: dict[str, Any], now: datetime) -> str:
            return sources[name].fetch(method, args, Window(FRIDAY_1, now), now=now).fingerprint

        prs = ("code-host", "merged_pull_requests", {"repo": "acme/checkout"})
        cal = ("calendar", "events", {"calendar": "priya"})
        assert whole(*prs, wed) != whole(*prs, thu)
        assert whole(*cal, wed) == whole(*cal, thu)

    def test_query_searches_titles_and_text(self) -> None:
        """query is a case-insensitive substring."""
        assert fetch("tracker", "issues_updated", {"query": "AUTOFILL"}, FRIDAY_1) == ["CHK-215"]
        assert fetch(
            "chat", "messages", {"channel": "#checkout-oncall", "query": "webhook"}, FRIDAY_2
        ) == ["m-1102-1", "m-1102-2"]

    def test_missing_required_arg_is_hzh102(self) -> None:
        """chat.messages needs a channel."""
        with pytest.raises(CapabilityError) as caught:
            fetch("chat", "messages", {}, FRIDAY_1)
        assert caught.value.code == "HZH102"

    def test_a_bad_record_is_hzh140(self, tmp_path: Path) -> None:
        """A record without a valid date, or a missing file, is a coded error."""
        (tmp_path / "calendar.jsonl").write_text('{"id": "x", "start": "soon"}\n', encoding="utf-8")
        sources = fixture_sources(tmp_path)
        window = Window.ending_at(FRIDAY_1, WEEK)
        for name, method in (("calendar", "events"), ("tracker", "issues_updated")):
            with pytest.raises(CapabilityError) as caught:
                sources[name].fetch(method, {}, window, now=FRIDAY_1)
            assert caught.value.code == "HZH140"


class TestPriyaContracts:
    def test_every_input_is_served_by_the_fixture_sources(self) -> None:
        """Each input's capability.method and args pass the adapter's own call check."""
        sources = fixture_sources(PRIYA)
        for name in ("weekly-report.prose.md", "weekly-report.v2.prose.md"):
            for spec in frontmatter(name)["hz"]["inputs"].values():
                capability, method = spec["from"].split(".")
                check_call(
                    sources[capability], method, spec["args"], Window.ending_at(FRIDAY_1, WEEK)
                )

    def test_v2_adds_exactly_the_incidents_input_and_chat_read(self) -> None:
        """The amendment widens inputs and requires by the on-call channel, nothing else;
        both carry Wednesday's discover hint (v1's names the input v2 adds)."""
        v1, v2 = (
            frontmatter("weekly-report.prose.md")["hz"],
            frontmatter("weekly-report.v2.prose.md")["hz"],
        )
        assert set(v2["inputs"]) - set(v1["inputs"]) == {"incidents"}
        assert v2["inputs"]["incidents"]["from"] == "chat.messages"
        assert set(v2["requires"]) - set(v1["requires"]) == {"chat:read"}
        assert v1["discover"] == v2["discover"]
        assert v2["discover"]["incident_doc"]["instead_of"] == "incidents"
        changed = ("inputs", "requires")
        assert {k: v for k, v in v2.items() if k not in changed} == {
            k: v for k, v in v1.items() if k not in changed
        }

    def test_the_output_is_the_report_next_to_the_contract(self) -> None:
        """file:weekly-report.md resolves to the starting report in the same folder."""
        asset = frontmatter("weekly-report.prose.md")["hz"]["outputs"]["section"]["asset"]
        assert asset == "file:weekly-report.md"
        assert (
            (PRIYA / asset.removeprefix("file:"))
            .read_text(encoding="utf-8")
            .startswith("# Checkout")
        )
