"""Approval turns: lessons from what the user changed, and the approval observed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from heinzel.capabilities.documents import TAG_PREFIX
from heinzel.turns import Turns, default_adapters
from ledger.spine import read_events
from machines import Wake, keys


def _approve_with_edit(path: Any) -> None:
    """Delete the tag line and the first bullet of the draft, as a user would."""
    lines = path.read_text(encoding="utf-8").split("\n")
    kept, dropped = [], False
    for line in lines:
        if line.startswith(TAG_PREFIX):
            continue
        if not dropped and line.startswith("- ship"):
            dropped = True
            continue
        kept.append(line)
    path.write_text("\n".join(kept), encoding="utf-8")


class TestApproval:
    """`Service.run_wakes` with a cause approval."""

    def test_an_edited_approval_records_lessons(self, make_service: Callable[..., Any]) -> None:
        """A removed line becomes a lesson; approval.observed has no text; the draft is approved."""
        service, heinzel_id, folder = make_service()
        adapters = default_adapters(service.settings)
        Turns(service).wake(heinzel_id, None, adapters=adapters)
        draft = next(iter(service.index.db.query("SELECT key FROM drafts")))["key"]
        wake = Wake("approval", keys.approval(heinzel_id, "section", draft))
        assert Turns(service).run_wakes(heinzel_id, [wake], adapters=adapters) == []
        _approve_with_edit(folder / "report.md")
        states = Turns(service).run_wakes(heinzel_id, [wake], adapters=adapters)
        assert [s.disposition for s in states] == ["learned"], states
        events = list(read_events(service.home.spine_path(heinzel_id)))
        lessons = [e for e in events if e.kind == "lesson.recorded"]
        assert lessons and "leave out lines like" in lessons[0].data["sentence"]
        observed = next(e for e in events if e.kind == "approval.observed")
        assert set(observed.data) >= {"approver", "share_changed", "approved_fp", "draft_key"}
        assert 0 < observed.data["share_changed"] < 1
        assert "ship" not in str(observed.data)
        shown = service.show(heinzel_id)
        assert [d["state"] for d in shown["drafts"]] == ["approved"]
        assert shown["lessons"]

    def test_a_deleted_section_is_observed_rejected(self, make_service: Callable[..., Any]) -> None:
        """The user deleted the draft: one approval.observed{rejected}, no turn, no lesson."""
        service, heinzel_id, folder = make_service()
        adapters = default_adapters(service.settings)
        Turns(service).wake(heinzel_id, None, adapters=adapters)
        draft = next(iter(service.index.db.query("SELECT key FROM drafts")))["key"]
        (folder / "report.md").write_text("# Report\n", encoding="utf-8")
        wake = Wake("approval", keys.approval(heinzel_id, "section", draft))
        assert Turns(service).run_wakes(heinzel_id, [wake], adapters=adapters) == []
        assert Turns(service).run_wakes(heinzel_id, [wake], adapters=adapters) == []
        events = list(read_events(service.home.spine_path(heinzel_id)))
        observed = [e for e in events if e.kind == "approval.observed"]
        assert [e.data["rejected"] for e in observed] == [True]
        assert not [e for e in events if e.kind == "lesson.recorded"]
        assert [d["state"] for d in service.show(heinzel_id)["drafts"]] == ["rejected"]


def _approve_with_secret(path: Any) -> None:
    """Delete the tag line and write a line holding a key and a password into the draft."""
    lines = path.read_text(encoding="utf-8").split("\n")
    kept: list[str] = []
    for line in lines:
        if line.startswith(TAG_PREFIX):
            continue
        if line.startswith("- ship"):
            line = f"- {SECRET} and password=hunter2 for ops"
        kept.append(line)
    path.write_text("\n".join(kept), encoding="utf-8")


SECRET = "sk-ant-api03-Zq8vR2mT9xLp4WnB7cYd1KsF6hJ3gE5a"


class TestLessonSecrets:
    def test_a_key_in_the_edit_never_reaches_the_spine(
        self, make_service: Callable[..., Any]
    ) -> None:
        """A lesson from an edit holding a key and a password keeps neither, spine or index."""
        service, heinzel_id, folder = make_service()
        adapters = default_adapters(service.settings)
        Turns(service).wake(heinzel_id, None, adapters=adapters)
        draft = next(iter(service.index.db.query("SELECT key FROM drafts")))["key"]
        wake = Wake("approval", keys.approval(heinzel_id, "section", draft))
        assert Turns(service).run_wakes(heinzel_id, [wake], adapters=adapters) == []
        _approve_with_secret(folder / "report.md")
        Turns(service).run_wakes(heinzel_id, [wake], adapters=adapters)
        spine = service.home.spine_path(heinzel_id).read_text(encoding="utf-8")
        lessons = [
            e
            for e in read_events(service.home.spine_path(heinzel_id))
            if e.kind == "lesson.recorded"
        ]
        assert lessons
        assert all("sha256" in e.data for e in lessons)
        rows = str(list(service.index.db.query("SELECT * FROM lessons")))
        for text in (spine, rows):
            assert SECRET not in text
            assert "hunter2" not in text
