"""The doctor finds a contract's capability with no adapter (issue 13, item 7), via `hz`."""

from __future__ import annotations

from pathlib import Path

from tests.loop.conftest import Hz


def needs_code_host(folder: Path) -> None:
    """digest.prose.md also reads merged pull requests from code-host."""
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


def test_doctor_names_a_capability_a_contract_needs_and_nobody_configured(
    hz: Hz, folder: Path
) -> None:
    """A contract reading code-host with no [adapters.code-host]: doctor says who needs
    it and the fix (HZH104) and exits 1, before any wake fails on it."""
    needs_code_host(folder)
    assert hz("system", "doctor").code == 0
    created = hz("heinzel", "new", "--from", "digest.prose.md")
    assert created.code == 0, created.err
    done = hz("system", "doctor")
    assert done.code == 1
    assert "!!  notes-digest needs code-host:" in done.out
    assert "fix: HZH104: add an [adapters.code-host] table" in done.out
    assert "needs files" not in done.out


def test_new_and_approve_warn_of_a_capability_nobody_configured(hz: Hz, folder: Path) -> None:
    """`new` and `approve` of that contract succeed (exit 0) but warn HZH104 naming the
    capability and `hz system doctor`; a contract whose capabilities are served does not."""
    assert "warning" not in hz("heinzel", "new", "--from", "digest.prose.md", "--name", "ok").out
    needs_code_host(folder)
    created = hz("heinzel", "new", "--from", "digest.prose.md")
    assert created.code == 0, created.err
    assert "warning: HZH104: notes-digest uses code-host" in created.out
    assert "`hz system doctor` shows the fix" in created.out
    assert "uses files" not in created.out
    approved = hz("approve", "notes-digest")
    assert approved.code == 0, approved.err
    assert "approved notes-digest v1" in approved.out
    assert "warning: HZH104: notes-digest uses code-host" in approved.out
