"""A done-when item "at most N bullets" is counted: the offline model drafts at most N
bullets (taken in turns from each input) and its check says how many it counted, so a
draft of eleven is never "met" against eight, and the draft is still placed."""

from __future__ import annotations

import re
from pathlib import Path

from tests.loop.conftest import Hz
from tests.turns.conftest import CONTRACT


def test_at_most_two_bullets_drafts_two_and_counts_them(hz: Hz, folder: Path) -> None:
    (folder / "notes.txt").write_text(
        "".join(f"note number {n}\n" for n in range(1, 6)), encoding="utf-8"
    )
    text = CONTRACT.format(render="always", done_when="the section has at most two bullets")
    (folder / "digest.prose.md").write_text(text, encoding="utf-8")
    assert hz("heinzel", "new", "--from", "digest.prose.md").code == 0
    assert hz("approve", "notes-digest").code == 0
    woke = hz("heinzel", "wake", "notes-digest")
    assert woke.code == 0 and " drafted, " in woke.out, woke.out + woke.err
    report = (folder / "report.md").read_text(encoding="utf-8")
    assert re.findall(r"^- .*$", report, re.M) == ["- note number 1", "- note number 2"], report
    assert "drafted 2 bullets from 1 input" in woke.out, woke.out
