"""A wake end to end on the offline model, with a real documents file."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from heinzel.capabilities.documents import TAG_PREFIX
from heinzel.turns import Turns, default_adapters
from ledger.errors import HzError
from ledger.spine import read_events
from machines.stores.journal import expand_carried


class TestWake:
    """`Service.wake`: a turn of cause asked, run in-process."""

    def test_a_wake_drafts_exactly_one_section(self, make_service: Callable[..., Any]) -> None:
        """The offline turn places one tagged section and finishes drafted."""
        service, heinzel_id, folder = make_service()
        result = Turns(service).wake(
            heinzel_id, "draft now", adapters=default_adapters(service.settings)
        )
        assert result["disposition"] == "drafted", result
        text = (folder / "report.md").read_text(encoding="utf-8")
        assert text.count("<!-- hz:draft key=") == 1
        assert TAG_PREFIX in text
        assert "ship the rounding fix" in text
        kinds = [e.kind for e in expand_carried(read_events(service.home.spine_path(heinzel_id)))]
        assert "draft.placed" in kinds and kinds[-1] == "turn.finished"
        assert "step.model" not in kinds and "model.request" in kinds
        assert service.verify(heinzel_id)[0]["ok"]

    def test_the_inbox_holds_the_message_first(self, make_service: Callable[..., Any]) -> None:
        """The message is in inbox/<req>.json and the body, never in the spine."""
        service, heinzel_id, _ = make_service()
        Turns(service).wake(heinzel_id, "draft now", adapters=default_adapters(service.settings))
        files = list(service.home.inbox_dir(heinzel_id).glob("*.json"))
        assert len(files) == 1 and "draft now" in files[0].read_text(encoding="utf-8")
        bodies = list(service.home.turns_dir(heinzel_id).glob("*.jsonl"))
        assert "draft now" in bodies[0].read_text(encoding="utf-8")
        spine = service.home.spine_path(heinzel_id).read_text(encoding="utf-8")
        assert "draft now" not in spine

    def test_done_when_unmet_places_nothing(self, make_service: Callable[..., Any]) -> None:
        """A Done-when item the draft fails: skipped done-when-unmet, nothing placed."""
        service, heinzel_id, folder = make_service(done_when="the section has at most 1 lines")
        result = Turns(service).wake(heinzel_id, None, adapters=default_adapters(service.settings))
        assert (result["state"], result["reason"]) == ("skipped", "done-when-unmet"), result
        assert "hz:draft" not in (folder / "report.md").read_text(encoding="utf-8")

    def test_nothing_to_do_places_nothing(self, make_service: Callable[..., Any]) -> None:
        """No items in the input: the offline model has nothing, and nothing is placed."""
        service, heinzel_id, folder = make_service(notes="")
        result = Turns(service).wake(heinzel_id, None, adapters=default_adapters(service.settings))
        assert result["state"] == "skipped", result
        assert "hz:draft" not in (folder / "report.md").read_text(encoding="utf-8")

    def test_show_lists_the_turn(self, make_service: Callable[..., Any]) -> None:
        """`show` has the turn with its disposition, and the draft pending."""
        service, heinzel_id, _ = make_service()
        Turns(service).wake(heinzel_id, None, adapters=default_adapters(service.settings))
        shown = service.show(heinzel_id)
        assert [t["disposition"] for t in shown["turns"]] == ["drafted"]
        assert [d["state"] for d in shown["drafts"]] == ["pending"]


class TestUnfetched:
    """An input that cannot be fetched stops a wake before anything is written."""

    def test_a_missing_file_refuses_the_wake_before_turn_started(
        self, make_service: Callable[..., Any]
    ) -> None:
        """The adapter's coded error reaches the caller; the spine gains no turn line."""
        service, heinzel_id, folder = make_service()
        (folder / "notes.txt").unlink()
        before = [e.kind for e in read_events(service.home.spine_path(heinzel_id))]
        with pytest.raises(HzError) as caught:
            Turns(service).wake(
                heinzel_id, "draft now", adapters=default_adapters(service.settings)
            )
        assert caught.value.code.startswith("HZH1")
        after = [e.kind for e in read_events(service.home.spine_path(heinzel_id))]
        assert after == before
        assert "hz:draft" not in (folder / "report.md").read_text(encoding="utf-8")


class TestUserWords:
    """A chat message or a retry's hint reaches the model as input, never as draft text."""

    def test_a_retry_hands_its_hint_to_the_model(self, make_service: Callable[..., Any]) -> None:
        """The forked turn's body holds the hint; the offline draft is not made of it."""
        from heinzel.tick.verbs import Verbs

        service, heinzel_id, folder = make_service()
        adapters = default_adapters(service.settings)
        Turns(service).wake(heinzel_id, "draft now", adapters=adapters)
        answer = Verbs(service, Turns(service), adapters).retry(heinzel_id, "fewer words, please")
        turns = service.show(heinzel_id)["turns"]
        assert [t["cause"] for t in turns] == ["asked", "retry"], answer
        body = service.home.turns_dir(heinzel_id) / f"{turns[-1]['id']}.jsonl"
        assert "fewer words, please" in body.read_text(encoding="utf-8")
        report = (folder / "report.md").read_text(encoding="utf-8")
        assert "fewer words" not in report and "draft now" not in report
