"""A waiting question and a pending draft read in the same words on every surface: `hz
heinzel list`, `hz drafts`, `hz heinzel show`, the wake line, the page and MCP, each built
by one function (`heinzel.strings.waits`)."""

from __future__ import annotations

import json
import re

from .conftest import CREATED, DRAFT, User
from .fake_providers import Outcome
from .test_surfaces_agree import _mcp, _page, _words

QUESTION = "Which incidents belong in it?"
ASK = {"report": "one thing is unclear", "question": QUESTION}


def test_a_waiting_question_and_a_pending_draft_are_worded_alike_everywhere(user: User) -> None:
    user.serve(lambda body, n: Outcome(CREATED))
    assert user.in_process("heinzel", "new", "summarise notes.txt into report.md").returncode == 0
    assert user.in_process("approve", "notes-digest").returncode == 0
    user.serve(lambda body, n: Outcome(DRAFT))
    drafted = user.hz("heinzel", "wake", "notes-digest")
    user.serve(lambda body, n: Outcome(ASK))
    woke = user.hz("heinzel", "wake", "notes-digest")
    asks = f"asks: {QUESTION}"
    draft = f"a draft waits for your approval in {user.folder / 'report.md'}"

    listed = user.hz("heinzel", "list").stdout
    waiting = user.hz("drafts").stdout
    shown = user.hz("heinzel", "show", "notes-digest").stdout
    _, page = _page(user)
    page_words = _words(page)
    mcp_list, mcp_show = _mcp(user)
    drafts_json = json.loads(user.hz("drafts", "--json").stdout)

    # the question: one sentence, on the wake line, list, drafts, show, the page and MCP
    assert asks in woke.stdout, woke.stdout
    assert f"notice: notes-digest: {asks}" in listed, listed
    assert f"notice: notes-digest: {asks}" in waiting and f"notes-digest: {asks}" in waiting
    assert f"  {asks}" in shown, shown
    assert f"It {asks}" in page_words and "a question waits" not in page_words, page_words
    notices = [n["message"] for n in mcp_list["heinzelmaennchen"][0]["notices"]]
    assert notices == [asks] == [n["message"] for n in mcp_show["notices"]], mcp_show["notices"]
    assert [q["said"] for q in mcp_show["questions"]] == [asks]
    assert [n["message"] for n in drafts_json[0]["notices"]] == [asks]
    # the draft: one sentence, on the wake line, drafts, show, the page and MCP's drafts
    assert f"{draft}: edit it there" in drafted.stdout, drafted.stdout
    assert f"notes-digest: {draft}" in waiting, waiting
    assert f"pending:  {draft}" in shown, shown
    assert re.search(f"A{re.escape(draft[1:])} \\(placed", page_words), page_words
    assert [d["said"] for d in drafts_json] == [draft]
    assert [d["said"] for d in mcp_show["drafts"] if d["state"] == "pending"] == [draft]
