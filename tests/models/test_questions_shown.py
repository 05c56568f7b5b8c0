"""A question the model asks shows as its words wherever something waits on the user: the
wake line, `show` (and `--json`), the list's notice; several open questions each show and
each is answered on its own (`--question TURN`)."""

from __future__ import annotations

import json
from typing import Any

from .conftest import CREATED, DRAFT, User
from .fake_providers import Outcome

FIRST = "Which incidents belong in it?"
SECOND = "Should the digest name the owners?"
ANSWER = "only the platform team's incidents"


def _asking(questions: list[str]) -> Any:
    """Ask each question in turn, one per wake; then draft once the answer is seen."""

    def script(body: dict[str, Any], n: int) -> Outcome:
        if ANSWER in json.dumps(body):
            return Outcome(DRAFT)
        asked = questions.pop(0) if questions else SECOND
        return Outcome({"report": "one thing is unclear", "question": asked})

    return script


def _approved(user: User) -> None:
    user.serve(lambda body, n: Outcome(CREATED))
    assert user.in_process("heinzel", "new", "summarise notes.txt into report.md").returncode == 0
    assert user.in_process("approve", "notes-digest").returncode == 0


def test_a_question_shows_as_its_words_in_wake_show_and_list(user: User) -> None:
    _approved(user)
    user.serve(_asking([FIRST]))
    woke = user.hz("heinzel", "wake", "notes-digest")
    assert woke.returncode == 0, woke.stderr
    assert f"asks: {FIRST}" in woke.stdout, woke.stdout
    assert 'hz heinzel answer notes-digest "..." --question tn-' in woke.stdout, woke.stdout
    shown = user.hz("heinzel", "show", "notes-digest")
    assert f"asks: {FIRST}" in shown.stdout, shown.stdout
    as_json = json.loads(user.hz("heinzel", "show", "notes-digest", "--json").stdout)
    [question] = as_json["questions"]
    assert question["kind"] == "question" and question["text"] == FIRST
    assert question["id"] == question["turn"] and question["turn"].startswith("tn-")
    listed = user.hz("heinzel", "list")
    assert f"notice: notes-digest: asks: {FIRST}" in listed.stdout, listed.stdout
    assert 'next: hz heinzel answer notes-digest "..." --question tn-' in listed.stdout
    [row] = json.loads(user.hz("heinzel", "list", "--json").stdout)
    assert [n["reason"] for n in row["notices"]] == ["question"]
    resumed = user.hz("heinzel", "resume", "notes-digest")
    assert resumed.returncode == 1 and resumed.stderr.startswith("HZH360: "), resumed.stderr
    assert FIRST in resumed.stderr and "--question tn-" in resumed.stderr
    waiting = user.hz("drafts")
    assert "no drafts waiting" in waiting.stdout, waiting.stdout
    assert f"notes-digest: asks: {FIRST}" in waiting.stdout, waiting.stdout


def test_two_open_questions_both_show_and_each_is_answered_on_its_own(user: User) -> None:
    _approved(user)
    user.serve(_asking([FIRST, SECOND]))
    assert user.hz("heinzel", "wake", "notes-digest").returncode == 0
    assert user.hz("heinzel", "wake", "notes-digest").returncode == 0
    shown = json.loads(user.hz("heinzel", "show", "notes-digest", "--json").stdout)
    texts = [q["text"] for q in shown["questions"]]
    assert texts == [FIRST, SECOND], shown["questions"]
    newer = shown["questions"][1]["turn"]
    bogus = user.hz("heinzel", "answer", "notes-digest", ANSWER, "--question", "tn-none")
    assert bogus.returncode == 1 and bogus.stderr.startswith("HZH350"), bogus.stderr
    done = user.hz("heinzel", "answer", "notes-digest", ANSWER, "--question", newer, "--json")
    assert done.returncode == 0, done.stderr
    answered = json.loads(done.stdout)
    assert answered["disposition"] == "drafted", answered
    left = json.loads(user.hz("heinzel", "show", "notes-digest", "--json").stdout)
    assert [q["text"] for q in left["questions"]] == [FIRST]
    assert [q["text"] for q in answered["questions"]] == [FIRST]
