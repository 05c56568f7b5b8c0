"""The rest of the command line's small lies (issue 13, item 8), through the `hz` executable."""

from __future__ import annotations

import json
from pathlib import Path

from tests.loop.conftest import Hz


def test_a_mistyped_name_gets_did_you_mean(approved: Hz) -> None:
    """`hz heinzel show notes-digets`: HZH080, exit 1, the hint names the close name."""
    done = approved("heinzel", "show", "notes-digets")
    assert done.code == 1
    assert done.err.startswith("HZH080: no Heinzelmännchen named 'notes-digets'")
    assert "hint: did you mean 'notes-digest'?" in done.err


def test_a_mistyped_command_gets_did_you_mean(hz: Hz) -> None:
    """`hz heinzel shwo`: a usage error (exit 2) that names the command meant."""
    done = hz("heinzel", "shwo", "notes-digest")
    assert done.code == 2
    assert "Did you mean 'show'?" in done.err


def test_approving_twice_is_already_approved_everywhere(approved: Hz, folder: Path) -> None:
    """A contract or a draft approved a second time: exit 1, HZH073 "already approved"."""
    again = approved("approve", "notes-digest")
    assert again.code == 1
    assert again.err.startswith("HZH073: notes-digest v1 is already approved")
    assert approved("heinzel", "wake", "notes-digest").code == 0
    key = json.loads(approved("drafts", "--json").out)[0]["key"]
    first = approved("approve", "notes-digest")
    assert first.code == 0, first.err
    for item in ("notes-digest", key):
        twice = approved("approve", item)
        assert twice.code == 1
        assert twice.err.startswith(f"HZH073: the draft {key} is already approved")
    assert approved("system", "daemon", "tick").code == 0
    seen = approved("approve", key)
    assert (seen.code, seen.err.split(":")[0]) == (1, "HZH073")
    assert "already approved" in seen.err


def test_a_chat_refused_with_hzh202_is_never_delivered(hz: Hz, tmp_path: Path) -> None:
    """A chat to a proposed one is refused, kept nowhere, and no asked turn runs later."""
    assert hz("heinzel", "new", "--from", "digest.prose.md").code == 0
    refused = hz("heinzel", "chat", "notes-digest", "please add a line")
    assert refused.code == 1
    assert refused.err.startswith("HZH202: ") and "was not kept" in refused.err
    assert list((tmp_path / "home").rglob("inbox/*.json")) == []
    assert hz("approve", "notes-digest").code == 0
    ticked = hz("system", "daemon", "tick")
    assert "asked" not in ticked.out
    turns = json.loads(hz("heinzel", "show", "notes-digest", "--json").out)["turns"]
    assert [t for t in turns if t["cause"] == "asked"] == []


def test_new_json_holds_no_json_in_strings(hz: Hz) -> None:
    """`hz heinzel new --json`: assets a list, frontmatter and pending objects, not strings."""
    done = hz("heinzel", "new", "--from", "digest.prose.md", "--json")
    assert done.code == 0
    row = json.loads(done.out)[0]
    assert row["assets"] == ["file:report.md"]
    assert row["frontmatter"]["name"] == "notes-digest"
    assert row["pending"] == {"kind": "approval", "ref": "v1"}
    assert isinstance(row["watched"], dict)


def test_list_artifact_accepts_a_file_in_any_form(approved: Hz, folder: Path) -> None:
    """The written ref, the bare path, ./path, the absolute path and file:<absolute> match."""
    for form in (
        "file:report.md",
        "report.md",
        "./report.md",
        str(folder / "report.md"),
        f"file:{folder / 'report.md'}",
    ):
        listed = approved("heinzel", "list", "--artifact", form, "--json")
        assert [r["name"] for r in json.loads(listed.out)] == ["notes-digest"], form
    other = approved("heinzel", "list", "--artifact", "notes.txt", "--json")
    assert json.loads(other.out) == []


def test_a_retired_row_shows_no_next_due(hz: Hz, folder: Path) -> None:
    """A scheduled one has a next due; after `retire` list shows none (text `-`, JSON null)."""
    contract = folder / "digest.prose.md"
    text = contract.read_text(encoding="utf-8")
    contract.write_text(
        text.replace("  namespace: me\n", '  namespace: me\n  schedule: "0 9 * * *"\n'),
        encoding="utf-8",
    )
    assert hz("heinzel", "new", "--from", "digest.prose.md").code == 0
    assert hz("approve", "notes-digest").code == 0
    due = json.loads(hz("heinzel", "list", "--json").out)[0]["next_due"]
    assert due is not None
    assert hz("heinzel", "retire", "notes-digest").code == 0
    assert json.loads(hz("heinzel", "list", "--json").out)[0]["next_due"] is None
    assert json.loads(hz("heinzel", "show", "notes-digest", "--json").out)["next_due"] is None
    line = hz("heinzel", "list").out.splitlines()[1]
    assert "retired" in line and due not in line
