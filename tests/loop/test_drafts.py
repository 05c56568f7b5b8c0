"""Drafts in the user's document: one live draft, placed where asked, left clean (issue 13)."""

from __future__ import annotations

import stat
from pathlib import Path

from tests.loop.conftest import Hz


class TestOneLiveDraft:
    """Findings 1 and 2 through the `hz` executable."""

    def test_wakes_keep_one_live_draft(self, approved: Hz, folder: Path) -> None:
        """Three wakes leave one tagged section in the document, and `hz drafts` lists one."""
        for _ in range(3):
            assert approved("heinzel", "wake", "notes-digest").code == 0
        text = (folder / "report.md").read_text(encoding="utf-8")
        assert text.count("🧝 DRAFT") == 1 and text.count("hz:draft key=") == 1
        assert text.startswith("# Report\n")
        listed = approved("drafts").out.strip().splitlines()
        assert len(listed) == 2  # the header and one draft

    def test_approved_draft_is_left_clean_and_not_redrafted(
        self, approved: Hz, folder: Path
    ) -> None:
        """Wake, approve, tick: hz's comments go, and no second identical draft is placed."""
        assert approved("heinzel", "wake", "notes-digest").code == 0
        assert approved("approve", "notes-digest").code == 0
        ticked = approved("system", "daemon", "tick")
        assert ticked.code == 0, ticked.err
        assert "source-changed" not in ticked.out
        text = (folder / "report.md").read_text(encoding="utf-8")
        assert "<!-- hz:" not in text and "🧝 DRAFT" not in text
        assert "ship the rounding fix" in text
        again = approved("system", "daemon", "tick")
        assert "source-changed" not in again.out
        assert "🧝 DRAFT" not in (folder / "report.md").read_text(encoding="utf-8")

    def test_a_changed_source_still_wakes(self, approved: Hz, folder: Path) -> None:
        """After the approval, a real change of notes.txt does wake source-changed."""
        assert approved("heinzel", "wake", "notes-digest").code == 0
        (folder / "notes.txt").write_text("something new\n", encoding="utf-8")
        ticked = approved("system", "daemon", "tick")
        assert "source-changed" in ticked.out


class TestPlacement:
    """``outputs.<name>.place`` and a document that does not exist yet."""

    def test_top_places_below_the_title(self, hz: Hz, folder: Path) -> None:
        """``place: top`` puts the draft above what the document already holds."""
        contract = folder / "digest.prose.md"
        contract.write_text(
            contract.read_text(encoding="utf-8").replace(
                '{asset: "file:report.md"}', '{asset: "file:report.md", place: top}'
            ),
            encoding="utf-8",
        )
        (folder / "report.md").write_text("# Report\n\n## Older\n\n- done\n", encoding="utf-8")
        assert hz("heinzel", "new", "--from", "digest.prose.md").code == 0
        assert hz("approve", "notes-digest").code == 0
        assert hz("heinzel", "wake", "notes-digest").code == 0
        text = (folder / "report.md").read_text(encoding="utf-8")
        assert text.index("🧝 DRAFT") < text.index("## Older")

    def test_a_bad_place_is_hzc073(self, hz: Hz, folder: Path) -> None:
        """``place: middle`` is refused at `new` with HZC073 and the forms it takes."""
        contract = folder / "digest.prose.md"
        contract.write_text(
            contract.read_text(encoding="utf-8").replace(
                '{asset: "file:report.md"}', '{asset: "file:report.md", place: middle}'
            ),
            encoding="utf-8",
        )
        done = hz("heinzel", "new", "--from", "digest.prose.md")
        assert done.code == 1 and done.err.startswith("HZC073")

    def test_missing_document_is_created_on_the_first_draft(
        self, approved: Hz, folder: Path
    ) -> None:
        """No report.md yet: the first wake creates it, 0600, with the draft."""
        (folder / "report.md").unlink()
        assert approved("heinzel", "wake", "notes-digest").code == 0
        report = folder / "report.md"
        assert "🧝 DRAFT" in report.read_text(encoding="utf-8")
        assert stat.S_IMODE(report.stat().st_mode) == 0o600
