"""Downstream wakes follow approved output only (docs/graph.md): in a diamond A -> B,
A -> C, B and C -> D, a pending draft wakes no reader; an approval wakes each reader once
by the approved text's fingerprint (``output_fp``), writers before readers in height
order; the same approved text wakes nobody again. A version closing a cycle is refused
at approve (HZC100), and the graph names D by its alias. All through the real ``hz``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.graph.diamond import Home, contract, woken

T0 = "2026-11-02T08:00:00Z"


@pytest.fixture(scope="module")
def approved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The four contracts created and approved through the real ``hz``, once per module;
    kept as played beside the folder the tests use (``pristine``)."""
    root = tmp_path_factory.mktemp("diamond") / "root"
    home = Home(root)
    (home.work / "a-in.md").write_text("# notes\n\n- the first note\n", encoding="utf-8")
    contract(home.work, "a", {"notes": "a-in.md"}, "a.md")
    contract(home.work, "b", {"a": "a.md"}, "b.md")
    contract(home.work, "c", {"a": "a.md"}, "c.md")
    contract(home.work, "d", {"b": "b.md", "c": "c.md"}, "d.md", alias="sink")
    for name in "abcd":
        home.ok(T0, "heinzel", "new", "--from", f"{name}.prose.md")
        home.ok(T0, "approve", name)
    shutil.copytree(root, root.parent / "pristine", symlinks=True)
    return root


@pytest.fixture
def diamond(approved: Path) -> Home:
    """The approved diamond, put back as it was approved (a home names its documents by
    their paths, so each test gets it at the same place, not a copy elsewhere)."""
    shutil.rmtree(approved)
    shutil.copytree(approved.parent / "pristine", approved, symlinks=True)
    return Home(approved)


@pytest.mark.slow
def test_readers_wake_on_approved_output_only_in_height_order(diamond: Home) -> None:
    names = diamond.ids()
    first = diamond.tick("2026-11-02T09:00:00Z")
    assert woken(first, names) == [("a", ["source-changed"])]  # only the one reading notes
    assert "🧝 DRAFT" in (diamond.work / "a.md").read_text(encoding="utf-8")

    # A's pending draft moved a.md: its readers are not woken by it
    assert woken(diamond.tick("2026-11-02T10:00:00Z"), names) == []

    diamond.approve_draft("a.md")
    third = diamond.tick("2026-11-02T11:00:00Z")
    # A's learning turn first (it observes output_fp), then its readers, same tick
    order = woken(third, names)
    assert order[0] == ("a", ["approval"])
    assert sorted(order[1:]) == [("b", ["source-changed"]), ("c", ["source-changed"])]
    keys = [w["wakes"][0]["key"] for w in third["woken"][1:]]
    assert all("@a:sha256:" in k for k in keys), keys  # <reader>@<input>:<output_fp>

    # B's and C's drafts are pending: D sleeps
    assert woken(diamond.tick("2026-11-02T12:00:00Z"), names) == []

    diamond.approve_draft("b.md")
    diamond.approve_draft("c.md")
    fifth = diamond.tick("2026-11-02T13:00:00Z")
    order = woken(fifth, names)
    assert sorted(order[:2]) == [("b", ["approval"]), ("c", ["approval"])]
    assert order[2:] == [("d", ["source-changed", "source-changed"])]  # both inputs, one turn
    # nothing moved since: the same approved texts wake nobody
    assert woken(diamond.tick("2026-11-02T14:00:00Z"), names) == []

    graph = json.loads(diamond.ok(T0, "graph", "--name", "sink", "--depth", "1", "--json"))
    [d] = [n for n in graph["nodes"] if n["kind"] == "heinzel"]
    assert d["name"] == "d" and d["aliases"] == ["sink"] and d["height"] == 2
    # depth 1: its two reads and its write, each declared and done by its one turn
    assert sorted((e["kind"], e["mark"]) for e in graph["edges"]) == [
        ("reads", "both"),
        ("reads", "both"),
        ("writes", "both"),
    ]


def test_a_cycle_is_refused_at_approve(diamond: Home) -> None:
    contract(diamond.work, "e", {"d": "d.md"}, "a-in.md")
    diamond.ok(T0, "heinzel", "new", "--from", "e.prose.md")
    refused = diamond.hz(T0, "approve", "e")
    assert refused.returncode == 1
    assert "HZC100" in refused.stderr
    work = diamond.work
    shown = refused.stderr.replace(str(work), "W")
    cycles = [
        f"e -> file:W/a-in.md -> a -> file:W/a.md -> {x} -> file:W/{x}.md -> d -> file:W/d.md -> e"
        for x in "bc"
    ]
    assert any(c in shown for c in cycles), refused.stderr
    listed = json.loads(diamond.ok(T0, "heinzel", "list", "--json"))
    assert [r["state"] for r in listed if r["name"] == "e"] == ["proposed"]
