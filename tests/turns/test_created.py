"""The created turn: `hz heinzel new "a sentence"` writes a contract, proposed until approved."""

from __future__ import annotations

from pathlib import Path

from heinzel.config import HeinzelSettings, Settings
from heinzel.service import Service
from heinzel.store.home import Home
from heinzel.turns import Turns
from ledger.spine import read_events

from .conftest import NOW

SENTENCE = (
    "every Friday at three, draft this week's section of our report from the merged PRs; I approve"
)


class TestCreated:
    """A created turn's outcome is a compiled contract text, v1 proposed."""

    def test_a_sentence_becomes_a_proposed_contract(self, tmp_path: Path) -> None:
        """The offline model fills a template; v1 is stored and proposed by heinzel."""
        settings = Settings(heinzel=HeinzelSettings(home=tmp_path))
        service = Service(Home(tmp_path), lambda: NOW, settings, owner="me")
        row = Turns(service).create_from_sentence(SENTENCE)
        assert row["disposition"] == "proposed", row
        assert row["state"] == "proposed"
        assert row["schedule"] == "0 15 * * FRI"
        text = service.home.contract_text_path(row["id"], 1).read_text(encoding="utf-8")
        assert "merged_pull_requests" in text
        kinds = [e.kind for e in read_events(service.home.spine_path(row["id"]))]
        assert kinds[0] == "heinzel.created" and "contract.proposed" in kinds
        proposed = next(
            e
            for e in read_events(service.home.spine_path(row["id"]))
            if e.kind == "contract.proposed"
        )
        assert proposed.data["by"] == "heinzel"
        approved = service.approve(row["name"])
        assert approved["state"] == "asleep"

    def test_the_report_says_it_filled_a_template(self, tmp_path: Path) -> None:
        """The turn's report names the offline model's rule."""
        settings = Settings(heinzel=HeinzelSettings(home=tmp_path))
        service = Service(Home(tmp_path), lambda: NOW, settings, owner="me")
        row = Turns(service).create_from_sentence(SENTENCE)
        finished = [
            e for e in read_events(service.home.spine_path(row["id"])) if e.kind == "turn.finished"
        ]
        assert "template" in finished[0].data["report"]
