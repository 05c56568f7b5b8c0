"""`hz heinzel answer NAME "free text"`: a question an outcome asked, answered in words."""

from __future__ import annotations

import json
from typing import Any

from ledger.spine import read_events

from .conftest import CREATED, DRAFT, User
from .fake_providers import Outcome

ANSWER = "only the platform team's incidents"
ASK = {"report": "one thing is unclear", "question": "Which incidents belong in it?"}


def _ask_then_draft(body: dict[str, Any], n: int) -> Outcome:
    """Ask until a request carries the user's answer, then draft."""
    return Outcome(DRAFT if ANSWER in json.dumps(body) else ASK)


def test_a_free_text_answer_resumes_and_reaches_the_model(user: User) -> None:
    """The asked turn waits; the answer is recorded (hash only in the spine), the waiting
    turn ends, one follow-up turn sees the answer as its input and drafts; a second answer
    finds nothing open (HZH210)."""
    user.serve(lambda body, n: Outcome(CREATED))
    assert user.in_process("heinzel", "new", "summarise notes.txt into report.md").returncode == 0
    assert user.in_process("approve", "notes-digest").returncode == 0
    provider = user.serve(_ask_then_draft)
    asked = user.hz("heinzel", "wake", "notes-digest", "--json")
    assert json.loads(asked.stdout)["state"] == "waiting", asked.stdout
    shown = user.hz("heinzel", "show", "notes-digest")
    assert "asks: Which incidents belong in it?" in shown.stdout, shown.stdout
    done = user.hz("heinzel", "answer", "notes-digest", ANSWER, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["disposition"] == "drafted", done.stdout
    assert ANSWER in json.dumps(provider.seen[-1].body)
    [spine] = (user.home / "heinzel").glob("hz-*/session.jsonl")
    events = list(read_events(spine))
    [answered] = [e for e in events if e.kind == "question.answered"]
    assert set(answered.data) == {"id", "hash"} and ANSWER not in spine.read_text()
    ended = [e.data["disposition"] for e in events if e.kind == "turn.finished"]
    assert ended[-2:] == ["asked", "drafted"]
    inbox = spine.parent / "inbox" / f"{answered.data['id']}.json"
    assert json.loads(inbox.read_text())["message"] == ANSWER
    body = (spine.parent / "turns" / f"{answered.turn}.jsonl").read_text()
    assert ANSWER in body
    again = user.hz("heinzel", "answer", "notes-digest", "another")
    assert again.returncode == 1 and again.stderr.startswith("HZH210"), again.stderr


def test_an_answer_killed_before_its_follow_up_is_finished_by_the_next(user: User) -> None:
    """Killed right after `question.answered`: nothing is lost; the next `hz heinzel answer`
    resumes the asking turn and runs the follow-up once with the first answer, then HZH210."""
    user.serve(lambda body, n: Outcome(CREATED))
    assert user.in_process("heinzel", "new", "summarise notes.txt into report.md").returncode == 0
    assert user.in_process("approve", "notes-digest").returncode == 0
    provider = user.serve(_ask_then_draft)
    asked = user.hz("heinzel", "wake", "notes-digest", "--json")
    assert json.loads(asked.stdout)["state"] == "waiting", asked.stdout
    killed = user.hz(
        "heinzel", "answer", "notes-digest", ANSWER, HZ_CRASH_AT="after:question.answered"
    )
    assert killed.returncode == 137, killed.stderr
    done = user.hz("heinzel", "answer", "notes-digest", "a later answer", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["disposition"] == "drafted", done.stdout
    assert ANSWER in json.dumps(provider.seen[-1].body)
    assert "a later answer" not in json.dumps(provider.seen[-1].body)
    [spine] = (user.home / "heinzel").glob("hz-*/session.jsonl")
    events = list(read_events(spine))
    assert [e.kind for e in events].count("question.answered") == 1
    follow = [e for e in events if e.kind == "turn.started" and "@answer:" in str(e.key)]
    assert len(follow) == 1
    again = user.hz("heinzel", "answer", "notes-digest", "another")
    assert again.returncode == 1 and again.stderr.startswith("HZH210"), again.stderr


def test_an_answer_killed_before_its_follow_up_resent_by_its_id_runs_the_follow_up(
    user: User,
) -> None:
    """Killed right after `question.answered`, the answer sent with `--request-id A`; the
    same answer resent with A: the follow-up it owes runs once, with the answer, now (as
    the next answer of any text runs it, not left for the next tick); the answer is
    recorded once, and a third send runs nothing."""
    user.serve(lambda body, n: Outcome(CREATED))
    assert user.in_process("heinzel", "new", "summarise notes.txt into report.md").returncode == 0
    assert user.in_process("approve", "notes-digest").returncode == 0
    provider = user.serve(_ask_then_draft)
    asked = user.hz("heinzel", "wake", "notes-digest", "--json")
    assert json.loads(asked.stdout)["state"] == "waiting", asked.stdout
    answer = ("heinzel", "answer", "notes-digest", ANSWER, "--request-id", "rq-killed1")
    killed = user.hz(*answer, HZ_CRASH_AT="after:question.answered")
    assert killed.returncode == 137, killed.stderr
    done = user.hz(*answer, "--json")
    assert done.returncode == 0, done.stderr
    [spine] = (user.home / "heinzel").glob("hz-*/session.jsonl")
    events = list(read_events(spine))
    assert [e.kind for e in events].count("question.answered") == 1
    follow = [e for e in events if e.kind == "turn.started" and "@answer:" in str(e.key)]
    assert len(follow) == 1, done.stdout
    assert ANSWER in json.dumps(provider.seen[-1].body)
    said = json.loads(done.stdout)
    assert said["delivered"].endswith("(its follow-up resumed now)"), said
    assert said["disposition"] == "drafted", said
    asked = len(provider.seen)
    again = user.hz(*answer, "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["delivered"].startswith("already delivered: answers")
    assert len(provider.seen) == asked
