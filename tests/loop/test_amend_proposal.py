"""Replacing a proposal before approval (issue 13, item 10), through the `hz` executable."""

from __future__ import annotations

import json
from pathlib import Path

from tests.loop.conftest import Hz


def test_amend_replaces_a_proposal_nobody_approved(hz: Hz, folder: Path) -> None:
    """`amend --from` on a proposed one proposes the new text; approve grants that text."""
    assert hz("heinzel", "new", "--from", "digest.prose.md").code == 0
    text = (folder / "digest.prose.md").read_text(encoding="utf-8")
    fixed = text.replace("max_usd: 0.5", "max_usd: 0.25")
    assert fixed != text
    (folder / "digest.v2.prose.md").write_text(fixed, encoding="utf-8")
    done = hz("heinzel", "amend", "notes-digest", "--from", "digest.v2.prose.md")
    assert done.code == 0, done.err
    assert "v2 proposed in place of v1" in done.out
    assert "`hz approve notes-digest`" in done.out
    approved = hz("approve", "notes-digest")
    assert approved.code == 0, approved.err
    assert "notes-digest v2" in approved.out
    shown = json.loads(hz("heinzel", "show", "notes-digest", "--json").out)
    assert shown["contract_version"] == 2
    assert shown["amendments"] == []
    assert hz("heinzel", "verify").code == 0
    assert hz("heinzel", "reindex").code == 0
    again = json.loads(hz("heinzel", "show", "notes-digest", "--json").out)
    assert again["contract_version"] == 2


def test_a_bad_replacement_is_refused_and_the_proposal_kept(hz: Hz, folder: Path) -> None:
    """A replacement that does not compile is refused with its code; v1 stays proposed."""
    assert hz("heinzel", "new", "--from", "digest.prose.md").code == 0
    (folder / "broken.prose.md").write_text("---\nname: x\n---\n", encoding="utf-8")
    done = hz("heinzel", "amend", "notes-digest", "--from", "broken.prose.md")
    assert done.code == 1
    assert "HZC" in done.err
    approved = hz("approve", "notes-digest")
    assert approved.code == 0, approved.err
    assert "notes-digest v1" in approved.out
