"""Readers see approved text (issue 38, item 4): a document input that is another
Heinzelmännchen's output is read as its last approved text, every ``hz:`` tag and pending
draft left out; a document with only a pending draft reads as before it. Through the
real ``hz``: the writer ``a`` drafts into a.md, the reader ``b`` reads a.md and drafts
into b.md; what ``b``'s turn was given is read from its body."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.graph.diamond import TAG, Home, aliased_reader, contract

T0 = "2026-11-02T08:00:00Z"


@pytest.fixture
def home(tmp_path: Path) -> Home:
    """``a`` (reads a-in.md, writes a.md) and ``b`` (reads a.md, writes b.md), approved."""
    home = Home(tmp_path / "root")
    (home.work / "a-in.md").write_text("# notes\n\n- the first note\n", encoding="utf-8")
    contract(home.work, "a", {"notes": "a-in.md"}, "a.md")
    contract(home.work, "b", {"up": "a.md"}, "b.md")
    for name in "ab":
        home.ok(T0, "heinzel", "new", "--from", f"{name}.prose.md")
        home.ok(T0, "approve", name)
    return home


def read_by_b(home: Home, now: str) -> str:
    """Wake ``b`` and return the content its turn was given for the input ``up``."""
    home.ok(now, "heinzel", "wake", "b")
    shown = json.loads(home.ok(now, "heinzel", "show", "b", "--json"))
    turn = shown["turns"][-1]["id"]
    [body] = (home.root / "home" / "heinzel").glob(f"*/turns/{turn}.jsonl")
    for line in body.read_text(encoding="utf-8").splitlines():
        value = json.loads(line).get("value")
        if isinstance(value, dict) and "inputs" in value:
            [up] = [i for i in value["inputs"] if i["name"] == "up"]
            return str(up["content"])
    raise AssertionError(f"no gathered inputs in {body}")


def test_a_reader_of_a_pending_draft_reads_the_document_as_before_it(home: Home) -> None:
    """``a``'s first draft pending: ``b`` reads a.md as it was before the draft (its
    title only), and its own draft copies no tag, marker or pending text."""
    home.ok("2026-11-02T09:00:00Z", "heinzel", "wake", "a")
    assert TAG in (home.work / "a.md").read_text(encoding="utf-8")
    seen = read_by_b(home, "2026-11-02T09:10:00Z")
    assert seen.strip() == "# a.md"
    drafted = (home.work / "b.md").read_text(encoding="utf-8")
    assert "the first note" not in drafted and "DRAFT (a" not in drafted
    assert "hz:draft" not in drafted


def test_a_reader_sees_the_approved_text_and_not_the_next_pending_one(home: Home) -> None:
    """``a``'s draft approved in the document (the tick has not settled its markers yet):
    ``b`` reads its text without hz's comments. ``a``'s next draft, pending below it
    with new text: ``b`` still reads only the approved text."""
    home.ok("2026-11-02T09:00:00Z", "heinzel", "wake", "a")
    home.approve_draft("a.md")
    seen = read_by_b(home, "2026-11-02T09:10:00Z")
    assert "the first note" in seen
    assert "<!-- hz:" not in seen and TAG not in seen
    (home.work / "a-in.md").write_text("# notes\n\n- a second note\n", encoding="utf-8")
    home.ok("2026-11-02T09:20:00Z", "heinzel", "wake", "a")
    assert "a second note" in (home.work / "a.md").read_text(encoding="utf-8")
    again = read_by_b(home, "2026-11-02T09:30:00Z")
    assert "the first note" in again and "a second note" not in again
    assert "<!-- hz:" not in again and TAG not in again


def test_a_files_read_reader_gets_the_approved_text_too(tmp_path: Path) -> None:
    """A reader of ``a``'s document through ``files.read`` (not ``documents.read``) is
    given it as approved as well: ``a``'s pending draft left out."""
    home = Home(tmp_path / "root")
    (home.work / "a-in.md").write_text("# notes\n\n- the first note\n", encoding="utf-8")
    contract(home.work, "a", {"notes": "a-in.md"}, "a.md")
    path = contract(home.work, "b", {"up": "a.md"}, "b.md")
    text = path.read_text(encoding="utf-8")
    text = text.replace("{from: documents.read, args: {doc: 'file:a.md'}}", "")
    text = text.replace("up: ", "up: {from: files.read, args: {path: 'a.md'}}")
    text = text.replace("requires: [documents:read,", "requires: [files:read, documents:read,")
    path.write_text(text, encoding="utf-8")
    for name in "ab":
        home.ok(T0, "heinzel", "new", "--from", f"{name}.prose.md")
        home.ok(T0, "approve", name)
    home.ok("2026-11-02T09:00:00Z", "heinzel", "wake", "a")
    assert TAG in (home.work / "a.md").read_text(encoding="utf-8")
    assert read_by_b(home, "2026-11-02T09:10:00Z").strip() == "# a.md"


@pytest.mark.parametrize("spelled", ["links/../a.md", "links/soft.md", "links/hard.md"])
def test_a_reader_naming_the_document_another_way_gets_the_approved_text(
    tmp_path: Path, spelled: str
) -> None:
    """A reader whose ``files.read`` names ``a``'s document another way (a path through
    ``..``, a symbolic link, a hard link: made before ``a`` drafts, as a user links a file)
    is given it as approved too: the document is matched by the file itself, not by how
    the path is spelled (`heinzel.index.flow.upstream_inputs`), from the contract's folder
    and from any other folder hz runs in."""
    home = aliased_reader(tmp_path / "root", spelled)
    home.ok("2026-11-02T09:00:00Z", "heinzel", "wake", "a")
    assert TAG in (home.work / spelled).read_text(encoding="utf-8")  # the draft is there
    assert read_by_b(home, "2026-11-02T09:10:00Z").strip() == "# a.md"
    home.cwd = tmp_path  # a daemon or a shell elsewhere: the spelling is the contract folder's
    assert read_by_b(home, "2026-11-02T09:20:00Z").strip() == "# a.md"
