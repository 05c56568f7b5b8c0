"""The demo's own pieces: a fresh home only, and Priya's edit of the draft."""

from __future__ import annotations

from pathlib import Path

import pytest

from heinzel.cli.demo import Week, priya_edits
from heinzel.errors import HeinzelError

DRAFT = """# Weekly report

🧝 DRAFT (weekly-report v1): edit, then delete this line to approve
<!-- hz:draft key=k -->

## weekly-report

### merged_prs
- pr 402
### board
- CHK-214
### calendar
- Payments partner sync
- Sprint demo

<!-- hz:end key=k -->
"""


class TestWeek:
    """The demo plays in a fresh home and copies the fixtures beside it."""

    def test_a_home_that_is_not_empty_is_refused(self, tmp_path: Path) -> None:
        """HZH241, and nothing is written."""
        (tmp_path / "home").mkdir()
        (tmp_path / "home" / "mine.txt").write_text("keep me")
        with pytest.raises(HeinzelError) as caught:
            Week(tmp_path / "home").setup()
        assert caught.value.code == "HZH241"
        assert sorted(p.name for p in (tmp_path / "home").iterdir()) == ["mine.txt"]

    def test_setup_copies_the_fixtures(self, tmp_path: Path) -> None:
        """The report and both contract versions are beside the home."""
        week = Week(tmp_path / "home")
        week.setup()
        names = {p.name for p in week.work.iterdir()}
        assert {"weekly-report.md", "weekly-report.prose.md", "weekly-report.v2.prose.md"} <= names


class TestPriyasEdit:
    """What Priya does on Monday, as text."""

    def test_the_tag_goes_the_board_moves_up_a_meeting_goes(self) -> None:
        """No tag line, board before merged_prs, the payments sync gone, markers kept."""
        edited = priya_edits(DRAFT)
        assert "🧝 DRAFT" not in edited
        assert edited.index("### board") < edited.index("### merged_prs")
        assert "Payments partner sync" not in edited
        assert "Sprint demo" in edited
        assert "<!-- hz:draft key=k -->" in edited and "<!-- hz:end key=k -->" in edited
