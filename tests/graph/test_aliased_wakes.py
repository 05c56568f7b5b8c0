"""The tick wakes a reader that names another's document another way (a path through
``..``, a symbolic or a hard link) as it wakes one that spells it alike (docs/graph.md):
on the writer's approval only, never on a pending draft, and after its writer. The file
is matched by itself, its device and inode (`heinzel.index.flow.aliased_reads`, the rule
gather's `upstream_inputs` uses). Through the real ``hz system daemon tick`` at HZ_NOW."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.graph.diamond import TAG, aliased_reader, woken

SPELLED = ["links/../a.md", "links/soft.md", "links/hard.md"]


@pytest.mark.parametrize("spelled", SPELLED)
def test_an_aliased_reader_wakes_once_on_approval_and_not_on_a_draft(
    tmp_path: Path, spelled: str
) -> None:
    """``a`` drafts at the first tick (``b`` is not woken by first sight of the file, nor
    at the next tick by the pending draft that moved it); approved, the next tick runs
    ``a``'s learning turn, then wakes ``b`` once, keyed by the approved text's fingerprint;
    the tick after wakes nobody."""
    home = aliased_reader(tmp_path / "root", spelled)
    names = home.ids()
    assert woken(home.tick("2026-11-02T09:00:00Z"), names) == [("a", ["source-changed"])]
    assert TAG in (home.work / spelled).read_text(encoding="utf-8")
    assert woken(home.tick("2026-11-02T10:00:00Z"), names) == []
    home.approve_draft("a.md")
    approved = home.tick("2026-11-02T11:00:00Z")
    assert woken(approved, names) == [("a", ["approval"]), ("b", ["source-changed"])]
    [wake] = approved["woken"][1]["wakes"]
    assert "@up:sha256:" in wake["key"], wake  # <reader>@<input>:<output_fp>
    assert woken(home.tick("2026-11-02T12:00:00Z"), names) == []


@pytest.mark.parametrize("spelled", SPELLED)
def test_an_aliased_reader_due_with_its_writer_wakes_after_it(tmp_path: Path, spelled: str) -> None:
    """``b`` is paused while ``a``'s draft is approved (its wake waits); unpaused, it is
    due at the same tick as ``a``'s next wake (its notes changed): ``a`` runs first, its
    reader after it (height order), though ``b``'s wake is the older."""
    home = aliased_reader(tmp_path / "root", spelled)
    names = home.ids()
    home.tick("2026-11-02T09:00:00Z")
    home.ok("2026-11-02T09:30:00Z", "heinzel", "pause", "b")
    home.approve_draft("a.md")
    assert woken(home.tick("2026-11-02T10:00:00Z"), names) == [("a", ["approval"])]
    home.ok("2026-11-02T10:30:00Z", "heinzel", "unpause", "b")
    (home.work / "a-in.md").write_text("# notes\n\n- a second note\n", encoding="utf-8")
    both = home.tick("2026-11-02T11:00:00Z")
    assert woken(both, names) == [("a", ["source-changed"]), ("b", ["source-changed"])]
