"""Coming from OpenProse (issue 13, item 11): every error of a file at once, OpenProse's own
keys kept, its other kinds, legacy programs and multi-node files named, through `hz`."""

from __future__ import annotations

from pathlib import Path

import pytest

from heinzel.contract import compile_contract
from heinzel.errors import ContractError
from tests.loop.conftest import Hz

MANY = """\
---
name: notes-digest
kind: responsibility
hz:
  schedul: "0 9 * * *"
  timezone: Mars/Olympus
  agent: {max_usd: 500}
---

### Goal

A digest of the notes.

### Done when

- the digest is short
- every note is covered
"""

OPENPROSE = """\
---
name: notes-digest
kind: responsibility
id: 067NC4KG01RG50R40M30E20918
version: 2
hz:
  requires: [files:read]
  inputs:
    notes: {from: files.read, args: {path: notes.txt}}
---

### Goal

A digest of the notes.

### Done when

- [ ] every note is covered
"""


def test_every_independent_error_is_printed_at_once(hz: Hz, folder: Path) -> None:
    """Three frontmatter errors and two body errors come in one run, in line order, exit 1."""
    (folder / "many.prose.md").write_text(MANY, encoding="utf-8")
    done = hz("heinzel", "new", "--from", "many.prose.md")
    assert done.code == 1
    codes = [line.split(":")[0] for line in done.err.splitlines() if line.startswith("HZC")]
    assert codes == ["HZC004", "HZC021", "HZC041", "HZC062", "HZC062"]
    assert "many.prose.md:5: unknown key hz.schedul" in done.err
    assert "did you mean 'schedule'?" in done.err
    assert "many.prose.md:16:" in done.err and "many.prose.md:17:" in done.err
    assert done.err.count("hint: ") == 5
    assert "5 problems in many.prose.md" in done.err
    assert hz("heinzel", "list").out.startswith("no Heinzelmännchen")


def test_the_first_error_is_still_the_one_raised() -> None:
    """The error a caller catches is the first one (its code), the rest ride along in order."""
    with pytest.raises(ContractError) as refused:
        compile_contract(MANY, source="many.prose.md")
    assert (refused.value.code, refused.value.line) == ("HZC004", 5)
    codes = [e.code for e in refused.value.errors]
    assert codes == ["HZC004", "HZC021", "HZC041", "HZC062", "HZC062"]


def test_openprose_id_and_version_are_accepted_and_kept(hz: Hz, folder: Path) -> None:
    """A responsibility with OpenProse's `id` and `version` is created; both are in the index."""
    (folder / "digest2.prose.md").write_text(OPENPROSE, encoding="utf-8")
    done = hz("heinzel", "new", "--from", "digest2.prose.md", "--json")
    assert done.code == 0, done.err
    listed = hz("heinzel", "list", "--contract", "id=067NC4KG01RG50R40M30E20918", "--json")
    assert '"notes-digest"' in listed.out
    assert '"notes-digest"' in hz("heinzel", "list", "--contract", 'version="2"', "--json").out


def test_pattern_and_system_are_openprose_kinds_hz_does_not_run(hz: Hz, folder: Path) -> None:
    """`kind: pattern` and `kind: system` get HZC010 saying what they are, not "unknown kind"."""
    for kind, says in (("pattern", "never run on its own"), ("system", "retired kind")):
        (folder / f"{kind}.prose.md").write_text(
            f"---\nname: a-{kind}\nkind: {kind}\n---\n\n### Slots\n\n- `x`: y\n", encoding="utf-8"
        )
        done = hz("heinzel", "new", "--from", f"{kind}.prose.md")
        assert done.code == 1
        assert done.err.startswith(f"HZC010: {kind}.prose.md:3: ")
        assert says in done.err and "unknown kind" not in done.err


def test_a_legacy_prose_program_is_named_as_such(hz: Hz, folder: Path) -> None:
    """An old `.prose` program (no frontmatter, `session "..."`) is HZC090, not "no frontmatter"."""
    (folder / "hello.prose").write_text('# hello\nsession "Say hello"\n', encoding="utf-8")
    done = hz("heinzel", "new", "--from", "hello.prose")
    assert done.code == 1
    assert done.err.startswith("HZC090: hello.prose:2: a legacy OpenProse .prose program")


def test_a_file_of_several_nodes_is_refused_with_that_reason(hz: Hz, folder: Path) -> None:
    """Inline `## name` nodes with their own sections: HZC091, not "written twice, merge"."""
    text = OPENPROSE + "\n## review\n\n### Goal\n\nReview it.\n\n### Done when\n\n- [ ] ok\n"
    (folder / "nodes.prose.md").write_text(text, encoding="utf-8")
    done = hz("heinzel", "new", "--from", "nodes.prose.md")
    assert done.code == 1
    assert done.err.startswith("HZC091: nodes.prose.md:20: the file holds 2 OpenProse nodes")
    assert "## review" in done.err and "written twice" not in done.err
