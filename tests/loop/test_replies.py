"""The chat answers in words: after a message (and a wake, a retry), `hz` prints what the
Heinzelmännchen did and said, read from its turn's record with no model call: where the
draft went and its first lines, its report line; `--json` has the same as `reply`."""

from __future__ import annotations

import json

from tests.loop.conftest import Runner


def test_a_chat_answers_with_the_draft_and_the_report(approved: Runner) -> None:
    sent = approved("heinzel", "chat", "notes-digest", "draft it now")
    assert sent.code == 0, sent.err
    assert "drafted into " in sent.out and "report.md:" in sent.out, sent.out
    assert "    - ship the rounding fix" in sent.out, sent.out
    assert "  says: offline model (rules, not AI)" in sent.out, sent.out
    as_json = json.loads(approved("heinzel", "chat", "notes-digest", "again", "--json").out)
    reply = as_json["reply"]
    assert reply["ended"] == "drafted" and reply["turn"] == as_json["turn"]
    assert "- ship the rounding fix" in reply["draft"]["preview"]
    assert reply["report"].startswith("offline model")


def test_a_wake_with_nothing_to_do_says_why(approved: Runner) -> None:
    assert approved("heinzel", "wake", "notes-digest").code == 0
    again = approved("heinzel", "wake", "notes-digest", "--json")
    reply = json.loads(again.out)["reply"]
    assert reply["said"], reply
    assert reply["ended"] in ("skipped", "drafted"), reply
