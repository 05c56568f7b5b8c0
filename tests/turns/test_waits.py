"""Waits a turn chooses (ADR 0049 statement 12): an outcome's ``wait`` is the machine's
wait, resolved by the tick; a question past ``max_wait`` ends as the contract says."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from heinzel.config import HeinzelSettings, Settings
from heinzel.service import Service
from heinzel.session.questions import open_asks
from heinzel.store.home import Home
from heinzel.tick.tick import Tick
from heinzel.turns import TurnHost, default_adapters
from ledger.event import Event, format_ts
from ledger.spine import read_events
from machines import Wake, keys
from machines.stores.journal import expand_carried, without_steps
from tests.turns.test_acts import answering

NOW = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)

CONTRACT = """---
name: notes-digest
kind: responsibility
hz:
  schedule: "0 3 1 1 *"
  requires: [files:read, documents:write]
  inputs:
    notes: {{from: files.read, args: {{path: notes.txt}}}}
  outputs:
    section: {{asset: "file:report.md"}}
  publishes: [documents.place_draft]
{more}---

### Goal

A short digest of the notes at the end of the report.

### Done when

- [ ] every item of `notes` is covered
"""

DRAFT = {
    "text": "- ship the rounding fix",
    "output": "section",
    "contract_version": 1,
    "done_when": [{"item": "every item of `notes` is covered", "met": True}],
}


class Home_:
    """A home with one approved Heinzelmännchen, a clock the test moves, a model that
    answers ``outcome``, and the tick."""

    def __init__(self, root: Path, outcome: dict[str, Any], more: str = "") -> None:
        self.now = NOW
        self.folder = root / "work"
        self.folder.mkdir(parents=True)
        (self.folder / "notes.txt").write_text("ship the rounding fix\n", encoding="utf-8")
        (self.folder / "report.md").write_text("# Report\n", encoding="utf-8")
        (self.folder / "digest.prose.md").write_text(CONTRACT.format(more=more), "utf-8")
        settings = Settings(heinzel=HeinzelSettings(home=root / "home"))
        self.service = Service(Home(root / "home"), lambda: self.now, settings, owner="me")
        row = self.service.create_from_files([str(self.folder / "digest.prose.md")])[0]
        self.service.approve(row["id"])
        self.id = str(row["id"])
        self.host = TurnHost(self.service, model=answering(outcome))
        self.adapters = default_adapters(self.service.settings)

    def wake(self) -> Any:
        wake = Wake("asked", keys.asked(self.id, "r1"))
        (state,) = self.host.run_wakes(self.id, [wake], adapters=self.adapters)
        return state

    def tick(self, **later: float) -> Any:
        self.now = self.now + timedelta(**later)
        return Tick(self.service, self.host, self.adapters, sleep=lambda _s: None).run()

    def events(self, kind: str) -> list[Event]:
        path = self.service.home.spine_path(self.id)
        return [e for e in expand_carried(read_events(path)) if e.kind == kind]


class TestOutcomeWaits:
    """A turn waits until a time or until a source moves, and the tick resumes it."""

    def test_a_turn_waits_until_a_time(self, tmp_path: Path) -> None:
        """``wait.until``: turn.waiting{step: outcome, until}, nothing placed; a tick before
        the time leaves it, the first tick after resumes it (timer) and it drafts."""
        until = format_ts(NOW + timedelta(hours=1))
        wait = {"why": "the reviewer has until ten", "until": until}
        home = Home_(tmp_path, {"report": "a digest", "draft": DRAFT, "wait": wait})
        state = home.wake()
        assert state.state == "waiting"
        [waiting] = home.events("turn.waiting")
        assert without_steps(waiting).data == {
            "step": "outcome",
            "until": until,
            "output": "section",
        }
        assert home.events("draft.placed") == []
        home.tick(minutes=30)
        assert home.events("turn.resumed") == []
        report = home.tick(minutes=31)
        assert [w.get("woken_by") for w in report.woken] == ["timer"]
        assert [e.data["disposition"] for e in home.events("turn.finished")] == ["drafted"]
        assert len(home.events("draft.placed")) == 1
        assert "ship the rounding fix" in (home.folder / "report.md").read_text("utf-8")

    def test_a_turn_waits_until_a_source_moves(self, tmp_path: Path) -> None:
        """``wait.source``: on {kind: source, input, fingerprint_not} with the gathered
        fingerprint; ticks while the file stays leave it, the tick after it changes
        resumes it (source) and it drafts."""
        wait = {"why": "the notes are being written", "source": "notes"}
        home = Home_(tmp_path, {"report": "a digest", "draft": DRAFT, "wait": wait})
        state = home.wake()
        assert state.state == "waiting"
        [waiting] = home.events("turn.waiting")
        on = waiting.data["on"]
        assert (on["kind"], on["input"]) == ("source", "notes")
        assert len(on["fingerprint_not"]) == 64
        home.tick(minutes=5)
        home.tick(minutes=5)
        assert home.events("turn.resumed") == []
        (home.folder / "notes.txt").write_text("ship the rounding fix\nand more\n", "utf-8")
        report = home.tick(minutes=5)
        assert [w.get("woken_by") for w in report.woken] == ["source"]
        assert [e.data["disposition"] for e in home.events("turn.finished")] == ["drafted"]

    def test_a_turn_waits_until_a_draft_is_approved(self, tmp_path: Path) -> None:
        """``wait.approval``: on {kind: approval, key} with the output's pending draft; the
        tick that reads it approved resumes the turn (approval), before the learning turn."""
        home = Home_(tmp_path, {"report": "a digest", "draft": DRAFT})
        home.wake()
        [placed] = home.events("draft.placed")
        wait = {"why": "after the last one is approved", "approval": "section"}
        later = {"report": "later", "nothing_to_do": True, "reason": "wait", "wait": wait}
        home.host = TurnHost(home.service, model=answering(later))
        wake = Wake("asked", keys.asked(home.id, "r2"))
        (state,) = home.host.run_wakes(home.id, [wake], adapters=home.adapters)
        assert state.state == "waiting"
        assert state.wait["on"] == {"kind": "approval", "key": placed.key}
        home.tick(minutes=5)
        assert home.events("turn.resumed") == []
        report_md = home.folder / "report.md"
        text = report_md.read_text("utf-8")
        report_md.write_text(
            "\n".join(x for x in text.split("\n") if not x.startswith("🧝 DRAFT")), "utf-8"
        )
        report = home.tick(minutes=5)
        assert report.woken[0]["woken_by"] == "approval"
        ended = [e for e in home.events("turn.skipped") if e.turn == state.turn]
        assert [e.data["reason"] for e in ended] == ["check-unmet"]

    def test_a_wait_on_a_source_that_is_not_an_input_goes_back_to_the_model(self) -> None:
        """check_against: wait.source names one of the turn's inputs."""
        from heinzel.engine.outcome import Outcome, check_against
        from heinzel.engine.spec import InputSpec, TurnSpec

        spec = TurnSpec(
            turn="t-1",
            cause="asked",
            contract_name="x",
            contract_version=1,
            body="",
            started_at=NOW,
            inputs=(InputSpec("notes", "", ""),),
            outputs=("section",),
        )
        outcome = Outcome.model_validate(
            {
                "report": "r",
                "nothing_to_do": True,
                "reason": "later",
                "wait": {"why": "w", "source": "board"},
            }
        )
        assert check_against(outcome, spec) == ["wait.source must be one of the inputs ['notes']"]


class TestUnanswered:
    """A question past ``max_wait`` ends as the contract says, never an endless re-wait."""

    def test_fall_back_goes_on_without_the_answer(self, tmp_path: Path) -> None:
        """The default: resumed by the timer, the turn ends asked with the report saying it
        went on unanswered, and later ticks find nothing to wait on."""
        home = Home_(tmp_path, {"report": "which week?", "question": "Which week is this for?"})
        assert home.wake().state == "waiting"
        home.tick(days=7, minutes=1)
        [finished] = home.events("turn.finished")
        assert finished.data["disposition"] == "asked"
        assert "unanswered" in finished.data["report"]
        home.tick(days=8)
        assert len(home.events("turn.waiting")) == 1
        assert len(home.events("turn.finished")) == 1
        # its question waits on nobody now: not listed, not shown, not answerable
        [row] = home.service.listing()
        assert "question" not in [n["reason"] for n in row["notices"]]
        assert open_asks(home.service, home.id) == []

    def test_abandon_ends_the_turn_unanswered_with_a_notice(self, tmp_path: Path) -> None:
        """``unanswered: abandon``: the tick ends the turn abandoned (unanswered) without
        resuming it, and posts one notice; the list says the last turn was abandoned."""
        home = Home_(
            tmp_path,
            {"report": "which week?", "question": "Which week is this for?"},
            more="  unanswered: abandon\n",
        )
        assert home.wake().state == "waiting"
        report = home.tick(days=7, minutes=1)
        [finished] = home.events("turn.finished")
        assert (finished.data["disposition"], finished.data["reason"]) == (
            "abandoned",
            "unanswered",
        )
        assert home.events("turn.resumed") == []
        [notice] = home.events("notice.posted")
        assert notice.data["reason"] == "unanswered"
        assert notice.key == f"{home.id}@notice:unanswered:{finished.turn}"
        assert report.notices and "unanswered" in report.notices[0]
        home.tick(days=8)
        assert len(home.events("notice.posted")) == 1
        [row] = home.service.listing()
        assert "the last turn abandoned (unanswered)" in [n["message"] for n in row["notices"]]
        assert "question" not in [n["reason"] for n in row["notices"]]


@pytest.mark.parametrize("wait", [{"why": "w"}, {"why": "w", "source": "a", "approval": "b"}])
def test_a_wait_needs_one_condition(wait: dict[str, str]) -> None:
    """until, source or approval; a source and an approval together are refused."""
    from pydantic import ValidationError

    from heinzel.engine.outcome import WaitFor

    with pytest.raises(ValidationError):
        WaitFor.model_validate(wait)
