"""The chat's turn in the background, and a proposed write answered from the page, with a
scripted model that the real child process reaches over loopback."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from heinzel.app import App
from ledger.spine import read_events
from tests import forkhz
from tests.waits import HANG

from .conftest import ORIGIN, TOKEN, demo_env, heinzel_id, web_app
from .scripted import PausingModel


@pytest.fixture
def model() -> Iterator[PausingModel]:
    """The scripted model, released and closed at the end."""
    scripted = PausingModel()
    yield scripted
    scripted.close()


def _client(home: Path, children: list[subprocess.Popen[bytes]], env: dict[str, str]) -> TestClient:
    client = TestClient(web_app(home, children, env), follow_redirects=False)
    assert client.get(f"/auth?token={TOKEN}").status_code == 303
    return client


def _post(client: TestClient, path: str, data: dict[str, str], json: bool = False) -> object:
    csrf = client.get("/").text.split('name="csrf" content="')[1].split('"')[0]
    headers = {"Origin": ORIGIN, "X-CSRF-Token": csrf}
    if json:
        headers["Accept"] = "application/json"
    return client.post(path, data=data, headers=headers)


def _kinds(home: Path, hid: str) -> list[str]:
    return [e.kind for e in read_events(home / "heinzel" / hid / "session.jsonl")]


def _running(home: Path, hid: str, env: dict[str, str]) -> list[str]:
    db = App.from_environment(str(home), env).service.index.db
    rows = db.execute("SELECT id FROM turns WHERE heinzel = ? AND state = 'running'", [hid])
    return [str(r[0]) for r in rows.fetchall()]


def test_a_chat_returns_while_its_turn_runs_and_a_second_is_queued(
    home: Path, children: list[subprocess.Popen[bytes]], model: PausingModel
) -> None:
    """The chat POST answers while its turn is still waiting on the model (the turn runs in a
    child process holding the spine's lock), and a second message is queued for that turn."""
    env = model.env(demo_env(home))
    hid = heinzel_id(home)
    with _client(home, children, env) as client:
        sent = _post(client, f"/h/{hid}/chat", {"text": "pause it please"}, json=True)
        assert sent.status_code == 200, sent.text  # type: ignore[attr-defined]
        assert sent.json()["delivered"] == "a new turn"  # type: ignore[attr-defined]
        assert model.reached.wait(timeout=HANG), "the child never reached the model"
        assert not model.gate.is_set()
        assert len(_running(home, hid, env)) == 1
        again = _post(client, f"/h/{hid}/chat", {"text": "and say why"}, json=True)
        assert again.json()["delivered"] == "queued for the running turn"  # type: ignore[attr-defined]
        model.gate.set()
        assert children[0].wait(timeout=120) == 0
    assert "turn.started" in _kinds(home, hid)


@pytest.fixture
def proposed(
    home: Path, children: list[subprocess.Popen[bytes]], model: PausingModel
) -> Iterator[tuple[TestClient, str, dict[str, str]]]:
    """A chat turn from the page whose model proposed `pause`: it waits for the answer."""
    env = model.env(demo_env(home))
    hid = heinzel_id(home)
    model.gate.set()
    with _client(home, children, env) as client:
        sent = _post(client, f"/h/{hid}/chat", {"text": "pause it please"}, json=True)
        assert sent.status_code == 200, sent.text  # type: ignore[attr-defined]
        assert children[0].wait(timeout=120) == 0
        assert "question.asked" in _kinds(home, hid)
        yield client, hid, env


@pytest.mark.parametrize(("said", "state"), [("yes", "paused"), ("no", "waiting")])
def test_the_page_answers_a_proposed_write(
    proposed: tuple[TestClient, str, dict[str, str]],
    home: Path,
    children: list[subprocess.Popen[bytes]],
    said: str,
    state: str,
) -> None:
    """The page shows the proposed write with Approve / Deny; Approve pauses it once, Deny
    leaves it waiting on its draft as before; either way the turn ends, the question answered."""
    client, hid, env = proposed
    page = client.get(f"/h/{hid}").text
    assert "It asks: may it run pause?" in page and 'value="no"' in page
    answered = _post(client, f"/h/{hid}/answer", {"said": said})
    assert answered.status_code == 303, answered.text  # type: ignore[attr-defined]
    assert children[-1].wait(timeout=120) == 0  # the answered turn went on in a child
    row = _show(hid, env)
    assert row["state"] == state
    events = list(read_events(home / "heinzel" / hid / "session.jsonl"))
    answers = [e.data["approved"] for e in events if e.kind == "question.answered"]
    assert answers == [said == "yes"]
    assert [e.kind for e in events].count("heinzel.paused") == (1 if said == "yes" else 0)
    assert all(t["state"] != "running" for t in row["turns"])
    assert "It asks: may it run pause?" not in client.get(f"/h/{hid}").text


def _show(hid: str, env: dict[str, str]) -> dict[str, Any]:
    shown = forkhz.run(
        [sys.executable, "-m", "heinzel", "heinzel", "show", hid, "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    found: dict[str, Any] = json.loads(shown.stdout)
    return found


def test_hz_heinzel_show_lists_the_proposal_the_page_shows(
    proposed: tuple[TestClient, str, dict[str, str]], home: Path
) -> None:
    """The real `hz heinzel show` sees the question the page's chat turn left waiting."""
    _, hid, env = proposed
    shown = forkhz.run(
        [sys.executable, "-m", "heinzel", "heinzel", "show", hid, "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    [question] = json.loads(shown.stdout)["questions"]
    assert question["kind"] == "proposal" and question["tool"] == "pause", question
    assert question["text"] == "may it run pause?"


def test_the_turn_page_shows_the_body_then_expired(
    proposed: tuple[TestClient, str, dict[str, str]], home: Path
) -> None:
    """A turn's page shows what it read, the tools it called and the model's messages from
    its body, escaped; once the body is gone it says expired and still lists the lines."""
    client, hid, _ = proposed
    rows = json.loads(
        forkhz.run(
            [sys.executable, "-m", "heinzel", "heinzel", "show", hid, "--json"],
            env=proposed[2],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    turn = rows["turns"][-1]["id"]
    page = client.get(f"/h/{hid}").text
    assert f'href="/h/{hid}/turn/{turn}"' in page
    detail = client.get(f"/h/{hid}/turn/{turn}")
    assert detail.status_code == 200
    assert "pause(" in detail.text and "moved to another repository" in detail.text
    assert "pause it please" in detail.text and "turn.started" in detail.text
    assert "&lt;events&gt;" in detail.text and "<events>" not in detail.text
    (home / "heinzel" / hid / "turns" / f"{turn}.jsonl").unlink()
    gone = client.get(f"/h/{hid}/turn/{turn}").text
    assert 'id="expired"' in gone and "turn.started" in gone
    assert client.get(f"/h/{hid}/turn/tn-nothing").status_code == 404


@pytest.mark.parametrize(("button", "after"), [("approve", "approved"), ("decline", "declined")])
def test_the_page_approves_or_declines_an_amendment_hz_heinzel_amend_filed(
    client: TestClient, home: Path, button: str, after: str
) -> None:
    """An amendment the user filed with the real `hz heinzel amend` shows Approve / Decline;
    each button does what `hz approve` / `hz heinzel decline` do to it."""
    hid = heinzel_id(home)
    env = demo_env(home)
    contract = home / "heinzel" / hid / "contract"
    latest = max(contract.glob("v*.prose.md"), key=lambda p: int(p.name[1:].split(".")[0]))
    amended = home / "v-next.prose.md"
    amended.write_text(latest.read_text(encoding="utf-8") + "\n- [ ] <b>one more line</b>\n")
    filed = forkhz.run(
        [sys.executable, "-m", "heinzel", "heinzel", "amend", hid, "--from", str(amended)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert filed.returncode == 0, filed.stderr
    page = client.get(f"/h/{hid}").text
    assert "Approve amendment" in page and "&lt;b&gt;one more line&lt;/b&gt;" in page
    done = _post(client, f"/h/{hid}/{button}", {})
    assert done.status_code == 303, done.text  # type: ignore[attr-defined]
    amendments = _show(hid, env)["amendments"]
    assert amendments[-1]["state"] == after, amendments
    assert "Approve amendment" not in client.get(f"/h/{hid}").text


class SlowAnswerModel(PausingModel):
    """Proposes ``pause`` at once; the request that carries the answer (the tool's return)
    waits until ``answered`` is set, so a test sees the resumed turn still on the model."""

    def __init__(self) -> None:
        super().__init__()
        self.answered = threading.Event()
        self.resumed = threading.Event()

    def script(self, body: dict[str, Any], n: int) -> Any:
        if body["messages"][-1].get("role") == "tool":
            self.resumed.set()
            self.answered.wait(timeout=HANG)
        return super().script(body, n)


def test_approving_a_proposed_write_returns_while_its_turn_goes_on(
    home: Path, children: list[subprocess.Popen[bytes]]
) -> None:
    """Approve answers at once: the answer is recorded (the question answered in the index)
    and the resumed turn runs in a child process, still waiting on the model when the POST
    has returned; then it ends and the write happened once."""
    model = SlowAnswerModel()
    try:
        model.gate.set()
        env = model.env(demo_env(home))
        hid = heinzel_id(home)
        with _client(home, children, env) as client:
            sent = _post(client, f"/h/{hid}/chat", {"text": "pause it please"}, json=True)
            assert sent.status_code == 200, sent.text  # type: ignore[attr-defined]
            assert children[0].wait(timeout=120) == 0
            answered = _post(client, f"/h/{hid}/answer", {"said": "yes"}, json=True)
            assert answered.status_code == 200, answered.text  # type: ignore[attr-defined]
            assert answered.json()["started"] is True  # type: ignore[attr-defined]
            assert model.resumed.wait(timeout=HANG), "the answered turn never went on"
            assert not model.answered.is_set()
            assert len(_running(home, hid, env)) == 1  # the turn goes on after the POST
            assert "question.answered" in _kinds(home, hid)
            model.answered.set()
            assert children[-1].wait(timeout=120) == 0
        assert _kinds(home, hid).count("heinzel.paused") == 1
        assert not _running(home, hid, env)
    finally:
        model.answered.set()
        model.close()
