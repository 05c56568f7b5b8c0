"""The doctor finds a contract's capability with no adapter (issue 13, item 7), via `hz`."""

from __future__ import annotations

from pathlib import Path

from tests.loop.conftest import Hz


def test_doctor_names_a_capability_a_contract_needs_and_nobody_configured(
    hz: Hz, folder: Path
) -> None:
    """A contract reading code-host with no [adapters.code-host]: doctor says who needs
    it and the fix (HZH104) and exits 1, before any wake fails on it."""
    text = (folder / "digest.prose.md").read_text(encoding="utf-8")
    text = text.replace(
        "requires: [files:read, documents:write]",
        "requires: [files:read, code-host:read, documents:write]",
    )
    text = text.replace(
        "    notes: {from: files.read, args: {path: notes.txt}}\n",
        "    notes: {from: files.read, args: {path: notes.txt}}\n"
        "    prs: {from: code-host.merged_pull_requests, args: {repo: octo/app}, window: 7d}\n",
    )
    (folder / "digest.prose.md").write_text(text, encoding="utf-8")
    assert hz("system", "doctor").code == 0
    created = hz("heinzel", "new", "--from", "digest.prose.md")
    assert created.code == 0, created.err
    done = hz("system", "doctor")
    assert done.code == 1
    assert "!!  notes-digest needs code-host:" in done.out
    assert "fix: HZH104: add an [adapters.code-host] table" in done.out
    assert "needs files" not in done.out
