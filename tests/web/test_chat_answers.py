"""The sidebar chat answers an open question (issue 12, item 4), as ``hz heinzel chat``
does: the page's message goes through ``App.verbs().chat`` and its child process."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from ledger.spine import read_events

from .conftest import ORIGIN, TOKEN, demo_env, heinzel_id, web_app
from .scripted import MODEL, fake

ANSWER = "only the platform team's incidents"
QUESTION = "Which incidents belong in it?"


def _script(body: dict[str, Any], n: int) -> Any:
    """Ask until a request carries the answer, then nothing to do."""
    if ANSWER in json.dumps(body):
        return fake.Outcome({"report": "noted", "nothing_to_do": True, "reason": "answered"})
    return fake.Outcome({"report": "one thing is unclear", "question": QUESTION})


@pytest.fixture
def env(home: Path) -> Iterator[dict[str, str]]:
    """The demo's environment with every model role at the scripted provider."""
    provider = fake.Provider("openai", _script)
    yield {
        **demo_env(home),
        "HZ_MODEL": MODEL,
        "HZ_MODEL_FAST": MODEL,
        "HZ_MODEL_BEST": MODEL,
        "HZ_BASE_URL": provider.base_url,
        "OPENAI_API_KEY": "sk-test",
    }
    provider.close()


def test_the_sidebar_chat_answers_the_open_question(
    home: Path, children: list[subprocess.Popen[bytes]], env: dict[str, str]
) -> None:
    """A wake leaves a question open; the page's message answers it in the child process
    (``question.answered`` once, exactly one turn after it: the follow-up, keyed by the
    question's turn, never a second turn for the same message); the next message is a new
    turn."""
    hid = heinzel_id(home)
    woken = subprocess.run(
        [sys.executable, "-m", "heinzel", "heinzel", "wake", hid, "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert json.loads(woken.stdout)["state"] == "waiting", woken.stderr
    client = TestClient(web_app(home, children, env), follow_redirects=False)
    with client:
        assert client.get(f"/auth?token={TOKEN}").status_code == 303
        csrf = client.get("/").text.split('name="csrf" content="')[1].split('"')[0]
        headers = {"Origin": ORIGIN, "X-CSRF-Token": csrf, "Accept": "application/json"}
        sent = client.post(f"/h/{hid}/chat", data={"text": ANSWER}, headers=headers)
        assert sent.status_code == 200, sent.text
        assert sent.json()["delivered"] == "answers the open question"
        assert sent.json()["question"] == QUESTION
        assert children[0].wait(timeout=120) == 0
        events = list(read_events(home / "heinzel" / hid / "session.jsonl"))
        [answered] = [e for e in events if e.kind == "question.answered"]
        after = [e for e in events if e.seq > answered.seq]
        assert [e.key for e in after if e.kind == "turn.started"] == [
            f"{hid}@answer:{answered.turn}"
        ]
        again = client.post(f"/h/{hid}/chat", data={"text": "and thanks"}, headers=headers)
        assert again.json()["delivered"] == "a new turn"
        assert children[1].wait(timeout=120) == 0
    events = list(read_events(home / "heinzel" / hid / "session.jsonl"))
    assert [e.kind for e in events].count("question.answered") == 1


def test_the_page_shows_the_question_and_answers_it_from_its_box(
    home: Path, children: list[subprocess.Popen[bytes]], env: dict[str, str]
) -> None:
    """ "Waiting on you" shows the model's question in its words with an answer box (never
    "Nothing."); the box's answer is recorded under that question and the page then has
    nothing waiting."""
    hid = heinzel_id(home)
    woken = subprocess.run(
        [sys.executable, "-m", "heinzel", "heinzel", "wake", hid, "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    asked = json.loads(woken.stdout)
    assert asked["state"] == "waiting", woken.stderr
    client = TestClient(web_app(home, children, env), follow_redirects=False)
    with client:
        assert client.get(f"/auth?token={TOKEN}").status_code == 303
        page = client.get(f"/h/{hid}").text
        waiting = page.split('id="pending"')[1].split("</section>")[0]
        assert QUESTION in waiting and "Nothing." not in waiting, waiting
        assert f'name="question" value="{asked["turn"]}"' in waiting
        csrf = page.split('name="csrf" content="')[1].split('"')[0]
        headers = {"Origin": ORIGIN, "X-CSRF-Token": csrf, "Accept": "application/json"}
        form = {"text": ANSWER, "question": asked["turn"]}
        sent = client.post(f"/h/{hid}/answer", data=form, headers=headers)
        assert sent.status_code == 200, sent.text
        events = list(read_events(home / "heinzel" / hid / "session.jsonl"))
        [answered] = [e for e in events if e.kind == "question.answered"]
        assert answered.turn == asked["turn"]
        after = client.get(f"/h/{hid}").text.split('id="pending"')[1].split("</section>")[0]
        assert QUESTION not in after, after


def test_the_pages_message_resent_with_its_id_is_delivered_once(
    home: Path, children: list[subprocess.Popen[bytes]], env: dict[str, str]
) -> None:
    """The sidebar's message carries its request id (`hz.js`); the same POST again (a
    retried request, a second click) after it answered the open question says "already
    delivered", starts no child and runs nothing: one `question.answered`, naming it."""
    hid = heinzel_id(home)
    woken = subprocess.run(
        [sys.executable, "-m", "heinzel", "heinzel", "wake", hid, "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert json.loads(woken.stdout)["state"] == "waiting", woken.stderr
    client = TestClient(web_app(home, children, env), follow_redirects=False)
    with client:
        assert client.get(f"/auth?token={TOKEN}").status_code == 303
        csrf = client.get("/").text.split('name="csrf" content="')[1].split('"')[0]
        headers = {"Origin": ORIGIN, "X-CSRF-Token": csrf, "Accept": "application/json"}
        form = {"text": ANSWER, "request_id": "rq-page1"}
        sent = client.post(f"/h/{hid}/chat", data=form, headers=headers)
        assert sent.json()["delivered"] == "answers the open question", sent.text
        assert children[0].wait(timeout=120) == 0
        again = client.post(f"/h/{hid}/chat", data=form, headers=headers)
        assert again.status_code == 200, again.text
        assert again.json()["delivered"].startswith("already delivered: answers the question")
        assert len(children) == 1
    events = list(read_events(home / "heinzel" / hid / "session.jsonl"))
    [answered] = [e for e in events if e.kind == "question.answered"]
    assert answered.data["request"] == "rq-page1"
    assert again.json()["turn"] == answered.turn
    assert [e.key for e in events if e.kind == "turn.started" and e.seq > answered.seq] == [
        f"{hid}@answer:{answered.turn}"
    ]
