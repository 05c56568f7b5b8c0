"""Amendments asked for in chat are the user's (issue 12, item 5), through the `hz`
executable on the offline model's rule: "also include X from S" becomes a pending
amendment filed as the user's request, citing the message; `hz approve` makes it v2 and
the next wake runs under v2."""

from __future__ import annotations

import json
from pathlib import Path

from ledger.spine import read_events
from machines.stores.journal import content_hash
from tests.loop.conftest import Hz

ASK = "also include the todo list from todo.txt"


def test_a_chat_asking_for_a_source_yields_the_users_amendment(approved: Hz, folder: Path) -> None:
    """The chat's turn files v2 by the user, citing the message in the inbox by id and hash;
    it waits for approval; approved, the next wake is pinned to v2 and reads the new input."""
    (folder / "todo.txt").write_text("write the release notes\n", encoding="utf-8")
    chat = approved("heinzel", "chat", "notes-digest", ASK)
    assert chat.code == 0, chat.err
    assert "amendment: v2 waits for you (your request): hz approve notes-digest" in chat.out
    assert "disposition: proposed" in chat.out
    shown = approved("heinzel", "show", "notes-digest")
    assert "v2 by user: proposed" in shown.out, shown.out
    [spine] = (folder.parent / "home" / "heinzel").glob("hz-*/session.jsonl")
    events = list(read_events(spine))
    [proposed] = [e for e in events if e.kind == "amendment.proposed"]
    request = proposed.data["requested_in"]
    inbox = json.loads((spine.parent / "inbox" / f"{request}.json").read_text("utf-8"))
    assert inbox["message"] == ASK
    assert proposed.data["hash"] == content_hash(ASK)
    assert proposed.data["by"] == "user" and proposed.data["widens"] is True
    assert [e.kind for e in events if e.kind == "draft.placed"] == []

    done = approved("approve", "notes-digest")
    assert done.code == 0, done.err
    assert "notes-digest v2" in done.out
    woken = approved("heinzel", "wake", "notes-digest")
    assert woken.code == 0, woken.err
    started = [e for e in read_events(spine) if e.kind == "turn.started"]
    assert started[-1].data["pins"]["contract_version"] == 2
    report = (folder / "report.md").read_text("utf-8")
    assert "### todo" in report and "- write the release notes" in report


def test_an_ordinary_chat_is_no_amendment(approved: Hz, folder: Path) -> None:
    """A message that asks for no source drafts as before: no amendment is filed."""
    chat = approved("heinzel", "chat", "notes-digest", "keep it short, please")
    assert chat.code == 0, chat.err
    assert "amendment" not in chat.out and "disposition: drafted" in chat.out
    [spine] = (folder.parent / "home" / "heinzel").glob("hz-*/session.jsonl")
    assert not [e for e in read_events(spine) if e.kind.startswith("amendment.")]
