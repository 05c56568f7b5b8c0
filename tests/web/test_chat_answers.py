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
from tests import forkhz
from tests.waits import HANG

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
    woken = forkhz.run(
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
    woken = forkhz.run(
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
    woken = forkhz.run(
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


def test_a_text_answer_returns_at_once_and_its_turn_goes_on_in_a_child(
    home: Path, children: list[subprocess.Popen[bytes]], env: dict[str, str]
) -> None:
    """The answer box's POST returns while the follow-up turn's model request is still
    held (a gate only the test opens): the answer is recorded in the request, the turn it
    resumes and its follow-up go on in a child, which ends once the gate opens."""
    import threading

    gate, reached = threading.Event(), threading.Event()

    def held(body: dict[str, Any], n: int) -> Any:
        if ANSWER in json.dumps(body):
            reached.set()
            gate.wait(timeout=HANG)
        return _script(body, n)

    provider = fake.Provider("openai", held)
    env = {**env, "HZ_BASE_URL": provider.base_url}
    hid = heinzel_id(home)
    try:
        woken = forkhz.run(
            [sys.executable, "-m", "heinzel", "heinzel", "wake", hid, "--json"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        asked = json.loads(woken.stdout)
        client = TestClient(web_app(home, children, env), follow_redirects=False)
        with client:
            assert client.get(f"/auth?token={TOKEN}").status_code == 303
            page = client.get(f"/h/{hid}").text
            csrf = page.split('name="csrf" content="')[1].split('"')[0]
            headers = {"Origin": ORIGIN, "X-CSRF-Token": csrf, "Accept": "application/json"}
            form = {"text": ANSWER, "question": asked["turn"]}
            sent = client.post(f"/h/{hid}/answer", data=form, headers=headers)
            assert sent.status_code == 200, sent.text
            assert sent.json()["started"] is True and not gate.is_set()
            assert reached.wait(timeout=HANG)  # the child's follow-up asks the model
            gate.set()
            [child] = children
            assert child.wait(timeout=HANG) == 0
        events = list(read_events(home / "heinzel" / hid / "session.jsonl"))
        follow = [e for e in events if e.kind == "turn.started" and e.turn != asked["turn"]]
        assert follow and follow[-1].data.get("cause") == "asked", follow
        assert events[-1].kind in ("turn.finished", "turn.skipped"), events[-1]
    finally:
        gate.set()
        provider.close()


def test_resume_is_not_offered_on_a_question_and_its_refusal_is_said(
    home: Path, children: list[subprocess.Popen[bytes]], env: dict[str, str]
) -> None:
    """A turn waiting on the model's question: the page offers no Resume (it can't end
    that wait), and a Resume posted anyway is refused in the request (HZH360, the answer
    box named), never "resume: its turn runs now" with a child that then refuses."""
    hid = heinzel_id(home)
    woken = forkhz.run(
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
        page = client.get(f"/h/{hid}").text
        actions = page.split('id="actions"')[1].split("</section>")[0]
        assert 'value="resume"' not in actions, actions
        csrf = page.split('name="csrf" content="')[1].split('"')[0]
        headers = {"Origin": ORIGIN, "X-CSRF-Token": csrf, "Accept": "application/json"}
        refused = client.post(f"/h/{hid}/do", data={"verb": "resume"}, headers=headers)
        assert refused.status_code == 400
        assert refused.json()["code"] == "HZH360" and "Waiting on you" in refused.json()["hint"]
    assert children == []
