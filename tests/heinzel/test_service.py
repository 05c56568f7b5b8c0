"""The core operations: create, approve, lifecycle, amendments, list and show."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from heinzel.errors import ContractError, HeinzelError
from heinzel.service import Service
from ledger.spine import read_events
from tests.heinzel.conftest import GOOD, SteppingClock, variant


def kinds(service: Service, heinzel_id: str) -> list[str]:
    return [e.kind for e in read_events(service.home.spine_path(heinzel_id))]


class TestCreate:
    def test_new_is_proposed_with_v1_kept(self, service: Service, weekly: Path) -> None:
        """A created one is proposed, its v1 text and compiled form are on disk."""
        [row] = service.create_from_files([str(weekly)])
        assert row["state"] == "proposed"
        assert row["id"].startswith("hz-") and len(row["id"]) == 29
        assert service.home.contract_text_path(row["id"], 1).read_text() == weekly.read_text()
        assert service.home.contract_json_path(row["id"], 1).is_file()
        assert kinds(service, row["id"]) == ["heinzel.created", "contract.proposed"]

    def test_several_files_at_once(self, service: Service, tmp_path: Path) -> None:
        """Each file becomes one; names come from the contracts."""
        paths = [str(GOOD / "weekly-report.prose.md"), str(GOOD / "standup-notes.prose.md")]
        rows = service.create_from_files(paths)
        assert sorted(r["name"] for r in rows) == ["standup-notes", "weekly-report"]

    def test_a_bad_file_creates_nothing(
        self, service: Service, weekly: Path, tmp_path: Path
    ) -> None:
        """One file that does not compile: none of the files are created."""
        bad = tmp_path / "bad.prose.md"
        bad.write_text("---\nname: x\n---\n")
        with pytest.raises(ContractError):
            service.create_from_files([str(weekly), str(bad)])
        assert service.listing() == []

    def test_names_are_unique_per_namespace(self, service: Service, weekly: Path) -> None:
        """A second one with the same name in the same namespace is refused."""
        service.create_from_files([str(weekly)])
        with pytest.raises(HeinzelError) as caught:
            service.create_from_files([str(weekly)])
        assert caught.value.code == "HZH072"
        [other] = service.create_from_files([str(weekly)], name="weekly-report-2")
        assert other["name"] == "weekly-report-2"

    def test_name_with_several_files_is_refused(self, service: Service, weekly: Path) -> None:
        """--name names one Heinzelmännchen, so it goes with one file."""
        with pytest.raises(HeinzelError) as caught:
            service.create_from_files([str(weekly), str(weekly)], name="x")
        assert caught.value.code == "HZH070"

    def test_unreadable_file(self, service: Service, tmp_path: Path) -> None:
        """A missing file is a coded error, not a traceback."""
        with pytest.raises(HeinzelError) as caught:
            service.create_from_files([str(tmp_path / "nope.prose.md")])
        assert caught.value.code == "HZC070"


class TestApproveAndLifecycle:
    def test_approve_makes_v1_asleep_with_next_due(self, service: Service, weekly: Path) -> None:
        """Approval turns proposed into v1, asleep, due at Friday 15:00 Berlin."""
        service.create_from_files([str(weekly)])
        row = service.approve("weekly-report")
        assert (row["state"], row["contract_version"]) == ("asleep", 1)
        assert row["next_due"] == "2026-10-30T14:00:00.000Z"
        with pytest.raises(HeinzelError) as caught:
            service.approve("weekly-report")
        assert caught.value.code == "HZH073"

    def test_pause_unpause_retire_unretire(self, service: Service, weekly: Path) -> None:
        """Each verb moves the state; a verb that makes no sense is refused."""
        service.create_from_files([str(weekly)])
        service.approve("weekly-report")
        assert service.lifecycle("weekly-report", "pause")["state"] == "paused"
        with pytest.raises(HeinzelError) as caught:
            service.lifecycle("weekly-report", "pause")
        assert caught.value.code == "HZH050"
        assert service.lifecycle("weekly-report", "unpause")["state"] == "asleep"
        assert service.lifecycle("weekly-report", "retire")["state"] == "retired"
        with pytest.raises(HeinzelError):
            service.lifecycle("weekly-report", "unpause")
        assert service.lifecycle("weekly-report", "unretire")["state"] == "asleep"

    def test_rename_keeps_the_id(self, service: Service, weekly: Path) -> None:
        """A rename changes the name the index answers to, not the id."""
        [row] = service.create_from_files([str(weekly)])
        renamed = service.rename("weekly-report", "checkout-weekly")
        assert (renamed["id"], renamed["name"]) == (row["id"], "checkout-weekly")
        with pytest.raises(HeinzelError) as caught:
            service.resolve("weekly-report")
        assert caught.value.code == "HZH080"


class TestAmendments:
    def approved(self, service: Service, weekly: Path) -> str:
        [row] = service.create_from_files([str(weekly)])
        service.approve(row["id"])
        return str(row["id"])

    def test_user_amendment_widening_is_accepted_and_approved(
        self, service: Service, weekly: Path
    ) -> None:
        """The user's widening amendment is filed, marked as widening, and becomes v2."""
        heinzel_id = self.approved(service, weekly)
        wider = variant(weekly, "max_usd: 0.5", "max_usd: 0.8", "v2.prose.md")
        amendment = service.amend("weekly-report", str(wider))
        assert (amendment["version"], amendment["by"], amendment["widens"]) == (2, "user", 1)
        assert service.resolve(heinzel_id)["state"] == "waiting"
        row = service.approve("weekly-report")
        assert (row["contract_version"], row["state"]) == (2, "asleep")
        assert service.home.contract_text_path(heinzel_id, 2).read_text() == wider.read_text()

    def test_heinzel_widening_is_refused(self, service: Service, weekly: Path) -> None:
        """HZC050: the same text proposed by the Heinzelmännchen is refused."""
        self.approved(service, weekly)
        wider = variant(weekly, "max_usd: 0.5", "max_usd: 0.8", "v2.prose.md")
        with pytest.raises(ContractError) as caught:
            service.propose_amendment(
                "weekly-report", wider.read_text(), by="heinzel", source="outcome"
            )
        assert caught.value.code == "HZC050"
        assert service.queries.pending_amendment(service.resolve("weekly-report")["id"]) is None

    def test_heinzel_narrowing_is_accepted(self, service: Service, weekly: Path) -> None:
        """A lower cap from the Heinzelmännchen narrows and is filed."""
        self.approved(service, weekly)
        narrower = variant(weekly, "max_usd: 0.5", "max_usd: 0.3", "v2.prose.md")
        amendment = service.propose_amendment(
            "weekly-report",
            narrower.read_text(),
            by="heinzel",
            source="outcome",
            reason="the report costs less than planned",
        )
        assert (amendment["by"], amendment["widens"]) == ("heinzel", 0)

    def test_decline(self, service: Service, weekly: Path) -> None:
        """A declined amendment leaves the version as it was."""
        heinzel_id = self.approved(service, weekly)
        wider = variant(weekly, "max_usd: 0.5", "max_usd: 0.8", "v2.prose.md")
        service.amend("weekly-report", str(wider))
        assert service.decline("weekly-report")["state"] == "declined"
        row = service.resolve(heinzel_id)
        assert (row["contract_version"], row["state"]) == (1, "asleep")
        assert "amendment.declined" in kinds(service, heinzel_id)


class TestList:
    def populate(self, service: Service, clock: SteppingClock) -> None:
        service.create_from_files(
            [
                str(GOOD / "weekly-report.prose.md"),
                str(GOOD / "standup-notes.prose.md"),
                str(GOOD / "team-release-notes.prose.md"),
            ]
        )
        service.approve("weekly-report")

    def test_filters(self, service: Service, clock: SteppingClock) -> None:
        """By artifact, state, contract name and version, and a frontmatter key."""
        self.populate(service, clock)
        names = lambda **kw: sorted(r["name"] for r in service.listing(**kw))  # noqa: E731
        assert names(artifact="doc:checkout/weekly-report") == ["weekly-report"]
        assert names(state="asleep") == ["weekly-report"]
        assert names(contract="weekly-report@1") == ["weekly-report"]
        assert names(contract="weekly-report@2") == []
        assert names(contract="hz.namespace=team") == ["release-notes"]
        assert len(names()) == 3

    def test_bad_filters_are_coded(self, service: Service) -> None:
        """An unknown state or a bad version is refused with a hint."""
        for kwargs, code in (({"state": "sleepy"}, "HZH082"), ({"contract": "x@vv"}, "HZH083")):
            with pytest.raises(HeinzelError) as caught:
                service.listing(**kwargs)
            assert caught.value.code == code

    def test_show(self, service: Service, clock: SteppingClock) -> None:
        """show carries versions, turns, lessons, pending and cost by cause."""
        self.populate(service, clock)
        shown = service.show("weekly-report")
        assert shown["contract_version"] == 1
        assert shown["pending"] is None
        assert shown["cost_month"] == {
            "total": 0.0,
            "by_cause": {},
            "tokens": 0,
            "tokens_cached": 0,
            "tokens_by_cause": {},
        }
        assert json.dumps(shown)  # JSON-able for --json


class TestRecord:
    def test_verify_and_reindex(self, service: Service, weekly: Path) -> None:
        """verify is ok on fresh chains; reindex rebuilds the same rows."""
        service.create_from_files([str(weekly)])
        service.approve("weekly-report")
        assert [r["ok"] for r in service.verify()] == [True]
        before = service.listing()
        service.reindex()
        assert service.listing() == before


class TestDeclinedIsNotProposedAgain:
    def test_a_declined_amendment_is_refused_from_the_heinzel_but_not_the_user(
        self, service: Service, weekly: Path
    ) -> None:
        """After a decline, the same text from the Heinzelmännchen is HZH079; the user may."""
        [row] = service.create_from_files([str(weekly)])
        service.approve(row["id"])
        narrower = variant(weekly, "max_usd: 0.5", "max_usd: 0.3", "v2.prose.md")
        service.propose_amendment(
            "weekly-report", narrower.read_text(), by="heinzel", source="outcome"
        )
        service.decline("weekly-report")
        with pytest.raises(HeinzelError) as caught:
            service.propose_amendment(
                "weekly-report", narrower.read_text(), by="heinzel", source="outcome"
            )
        assert caught.value.code == "HZH079"
        assert service.amend("weekly-report", str(narrower))["state"] == "proposed"
