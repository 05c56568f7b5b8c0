"""The tick's report says how an approval wake ended when the draft was read as rejected."""

from __future__ import annotations

from pathlib import Path

from tests.tick.homes import hz, make_home, tick

LATER = "2026-11-06T15:10:00Z"
"""Ten minutes after the Friday tick that placed the draft."""


def _delete_the_draft(document: Path) -> None:
    """Cut the draft (its tag line, markers and text) out of the document, as a user would."""
    text = document.read_text(encoding="utf-8")
    document.write_text(text[: text.index("🧝 DRAFT")], encoding="utf-8")


def test_a_deleted_draft_is_reported_rejected(tmp_path: Path) -> None:
    """A draft whose markers the user deleted: the approval wake runs no turn, and both
    `--json` and the text of `hz system daemon tick` say it was read as rejected."""
    root, [heinzel_id] = make_home(tmp_path, 1)
    placed = tick(root)
    assert [e["disposition"] for w in placed["woken"] for e in w["ended"]] == ["drafted"]
    _delete_the_draft(root / "report-0.md")
    [woken] = tick(root, HZ_NOW=LATER)["woken"]
    assert [w["cause"] for w in woken["wakes"]] == ["approval"]
    [ended] = woken["ended"]
    assert (ended["approval"], ended["turn"]) == ("rejected", None)
    assert ended["draft"].startswith(f"{heinzel_id}@v1@")
    again = hz(root, "system", "daemon", "tick", HZ_NOW=LATER)
    assert again.returncode == 0, again.stderr
    assert "report-0: approval" not in again.stdout  # once per draft


def test_the_text_report_names_the_rejection(tmp_path: Path) -> None:
    """The printed line for the approval wake is not a bare "NAME: approval"."""
    root, _ = make_home(tmp_path, 1)
    tick(root)
    _delete_the_draft(root / "report-0.md")
    done = hz(root, "system", "daemon", "tick", HZ_NOW=LATER)
    assert done.returncode == 0, done.stderr
    expected = (
        "  report-0: approval -> no turn: the draft was read as rejected "
        "(its markers are gone; no lesson)"
    )
    assert expected in done.stdout.splitlines()
