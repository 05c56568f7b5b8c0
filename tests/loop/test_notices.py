"""Notices a user reads where they look (issue 13, items 1 and 12): an approval of a
superseded section, and a failed last turn, in `list`, `show` and `hz drafts`, through `hz`."""

from __future__ import annotations

import json
from pathlib import Path

from tests.loop.conftest import Hz
from tests.loop.test_exits import nowhere

__all__ = ["nowhere"]


def test_approving_a_superseded_section_in_the_document_gets_a_notice(
    approved: Hz, folder: Path
) -> None:
    """The user deletes an older draft's tag after a newer draft was placed: the tick
    posts one notice saying it counts for nothing, and list, show and drafts carry it."""
    assert "-> drafted" in approved("system", "daemon", "tick").out
    report = folder / "report.md"
    text = report.read_text(encoding="utf-8")
    tag = next(line for line in text.splitlines() if "DRAFT" in line)
    report.write_text(text.replace(tag + "\n", ""), encoding="utf-8")  # approve in the document
    assert approved("heinzel", "wake", "notes-digest").code == 0  # a newer draft
    tick = approved("system", "daemon", "tick")
    assert tick.code == 0, tick.out + tick.err
    assert "notice: a section of an older" in tick.out
    assert "counts for nothing" in tick.out
    again = approved("system", "daemon", "tick")
    assert "counts for nothing" not in again.out  # posted once
    shown = approved("heinzel", "show", "notes-digest")
    assert "notice:   an older draft's section was approved" in shown.out
    assert "next: approve the newer draft (hz drafts)" in shown.out
    drafts = approved("drafts")
    assert "notice: notes-digest: an older draft's section" in drafts.out
    listed = approved("heinzel", "list", "--json")
    assert [n["reason"] for n in json.loads(listed.out)[0]["notices"]] == ["superseded"]
    pending = json.loads(approved("drafts", "--json").out)
    assert approved("approve", pending[0]["key"]).code == 0
    assert approved("system", "daemon", "tick").code == 0  # the approval observed
    assert "notice" not in approved("heinzel", "show", "notes-digest").out


def test_a_failed_last_turn_is_a_notice_in_list_and_show(nowhere: Hz) -> None:
    """After a wake that failed, `list` and `show` say the last turn failed, with its code
    and the command that tries again."""
    assert nowhere("heinzel", "wake", "notes-digest").code == 1
    listed = nowhere("heinzel", "list")
    assert "notice: notes-digest: the last turn failed (HZH131)" in listed.out, listed.out
    assert "next: hz heinzel show notes-digest; hz heinzel wake notes-digest" in listed.out
    shown = nowhere("heinzel", "show", "notes-digest", "--json")
    assert json.loads(shown.out)["notices"][0]["reason"] == "failed"


def test_a_retired_ones_failed_notice_does_not_send_you_to_wake(nowhere: Hz) -> None:
    """Retired after a failed turn: its notice's next step brings it back first (a wake of
    a retired one is refused), and that step works."""
    assert nowhere("heinzel", "wake", "notes-digest").code == 1
    assert nowhere("heinzel", "retire", "notes-digest").code == 0
    [notice] = json.loads(nowhere("heinzel", "show", "notes-digest", "--json").out)["notices"]
    assert notice["next"] == (
        "hz heinzel show notes-digest; hz heinzel unretire notes-digest, "
        "then hz heinzel wake notes-digest tries again"
    )
    assert (
        "next: hz heinzel show notes-digest; hz heinzel unretire" in nowhere("heinzel", "list").out
    )
    assert nowhere("heinzel", "unretire", "notes-digest").code == 0
