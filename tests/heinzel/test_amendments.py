"""HZC050: a Heinzelmännchen may narrow its contract, only the user may widen it."""

from __future__ import annotations

from pathlib import Path

import pytest

from heinzel.contract import CompiledContract, check_amendment, compile_contract, widenings
from heinzel.errors import ContractError

WEEKLY = (
    Path(__file__).resolve().parents[2]
    / "fixtures"
    / "contracts"
    / "good"
    / "weekly-report.prose.md"
).read_text(encoding="utf-8")
V1 = compile_contract(WEEKLY)

INCIDENTS = WEEKLY.replace("documents:write]", "documents:write, chat:read]").replace(
    "    calendar: {from: calendar.events, window: 7d}",
    "    calendar: {from: calendar.events, window: 7d}\n"
    "    incidents: {from: chat.messages, args: {channel: oncall}, window: 7d}",
)


def amended(old: str, new: str) -> CompiledContract:
    assert old in WEEKLY
    return compile_contract(WEEKLY.replace(old, new))


WIDENING = {
    "requires": amended("tracker:read,", "tracker:read, files:read,"),
    "inputs.new": amended(
        "    calendar: {from: calendar.events, window: 7d}",
        "    calendar: {from: calendar.events, window: 7d}\n"
        "    meetings: {from: calendar.events, args: {query: 1on1}, window: 7d}",
    ),
    "inputs.longer-window": amended(
        "calendar: {from: calendar.events, window: 7d}",
        "calendar: {from: calendar.events, window: 30d}",
    ),
    "inputs.other-args": amended("repo: acme/checkout", "repo: acme/payments"),
    "outputs": amended('"doc:checkout/weekly-report"', '"doc:checkout/monthly-report"'),
    "max_usd.higher": amended("max_usd: 0.5", "max_usd: 0.9"),
    "max_usd.removed": amended("max_usd: 0.5, ", ""),
    "schedule.times": amended('"0 15 * * FRI"', '"0 15 * * MON,FRI"'),
    "schedule.timezone": amended("Europe/Berlin", "Asia/Tokyo"),
    "approvers.added": amended("approvers: [owner]", "approvers: [owner, theo]"),
    "approvers.replaced": amended("approvers: [owner]", "approvers: [theo]"),
    "namespace": amended("namespace: me", "namespace: team"),
}

NARROWING = {
    "fewer-inputs": amended("    calendar: {from: calendar.events, window: 7d}\n", ""),
    "fewer-requires": compile_contract(
        WEEKLY.replace(", calendar:read", "").replace(
            "    calendar: {from: calendar.events, window: 7d}\n", ""
        )
    ),
    "shorter-window": amended(
        "calendar: {from: calendar.events, window: 7d}",
        "calendar: {from: calendar.events, window: 3d}",
    ),
    "new-facet": amended(
        "calendar: {from: calendar.events, window: 7d}",
        "calendar: {from: calendar.events, window: 7d, facet: titles}",
    ),
    "lower-cap": amended("max_usd: 0.5", "max_usd: 0.3"),
    "no-schedule": amended('  schedule: "0 15 * * FRI"\n', ""),
    "body-only": amended("fits on one screen", "fits in ten lines"),
    "longer-recheck": amended("recheck: 1h}", "recheck: 2h}"),
    "no-publishes": amended("publishes: [documents.place_draft]", "publishes: []"),
}


class TestWidenings:
    @pytest.mark.parametrize("case", sorted(WIDENING))
    def test_heinzel_widening_is_refused(self, case: str) -> None:
        """Each widening proposed by the Heinzelmännchen is HZC050, naming what widens."""
        with pytest.raises(ContractError) as refused:
            check_amendment(V1, WIDENING[case], proposed_by="heinzel")
        assert refused.value.code == "HZC050"
        assert case.partition(".")[0] in refused.value.message

    @pytest.mark.parametrize("case", sorted(WIDENING))
    def test_the_same_text_from_the_user_is_accepted(self, case: str) -> None:
        """The user may widen anything."""
        check_amendment(V1, WIDENING[case], proposed_by="user")

    @pytest.mark.parametrize("case", sorted(NARROWING))
    def test_narrowing_is_allowed(self, case: str) -> None:
        """Fewer inputs, a lower cap, no schedule, a new facet, body edits: accepted."""
        assert widenings(V1, NARROWING[case]) == []
        check_amendment(V1, NARROWING[case], proposed_by="heinzel")

    def test_priyas_incidents_amendment_needs_her(self) -> None:
        """The worked example's v2 (chat:read, incidents) widens requires and inputs."""
        v2 = compile_contract(INCIDENTS)
        assert widenings(V1, v2) == ["requires chat:read", "inputs.incidents"]
        with pytest.raises(ContractError) as refused:
            check_amendment(V1, v2, proposed_by="heinzel")
        assert refused.value.render().startswith("HZC050: <amendment>: ")
        check_amendment(V1, v2, proposed_by="user")

    def test_a_new_publish_widens(self) -> None:
        """Publishing where the old version published nothing: widening."""
        quiet = amended("publishes: [documents.place_draft]", "publishes: []")
        assert widenings(quiet, V1) == ["publishes documents.place_draft"]

    def test_a_dropped_facet_widens(self) -> None:
        """Watching the whole input instead of one facet reads more: widening."""
        faceted = amended(
            "calendar: {from: calendar.events, window: 7d}",
            "calendar: {from: calendar.events, window: 7d, facet: titles}",
        )
        assert widenings(faceted, V1) == ["inputs.calendar"]
