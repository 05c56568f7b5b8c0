"""The page's buttons for a Heinzelmännchen's life (``POST /h/ID/do``): pause, unpause,
retire and unretire act in the request; wake, retry and resume are checked in the request
and their turn runs in a real child process (`heinzel.web.actions`); a failed turn shows its
code and hint with Retry and Wake beside it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from heinzel.app import App
from heinzel.web.actions import spawn_verb
from heinzel.web.server import create_app
from ledger.spine import read_events
from tests import forkhz

from .conftest import ORIGIN, TOKEN, demo_env, heinzel_id
from .scripted import MODEL, fake


def _client(home: Path, env: dict[str, str], children: list[Any]) -> TestClient:
    def start_verb(root: Path, hid: str, verb: str, hint: str, rid: str | None) -> None:
        children.append(spawn_verb(root, hid, verb, hint, env, request_id=rid))

    web = create_app(
        lambda: App.from_environment(str(home), env),
        TOKEN,
        hosts=["testserver"],
        idle_seconds=0,
        start_verb=start_verb,
    )
    return TestClient(web, follow_redirects=False)


def _post(client: TestClient, hid: str, **form: str) -> Any:
    page = client.get(f"/h/{hid}").text
    csrf = page.split('name="csrf" content="')[1].split('"')[0]
    headers = {"Origin": ORIGIN, "X-CSRF-Token": csrf, "Accept": "application/json"}
    return client.post(f"/h/{hid}/do", data=form, headers=headers)


def _started(home: Path, hid: str) -> list[Any]:
    spine = home / "heinzel" / hid / "session.jsonl"
    return [e for e in read_events(spine) if e.kind == "turn.started"]


def test_the_buttons_pause_wake_retry_and_retire_as_the_commands_do(home: Path) -> None:
    env = demo_env(home)
    hid = heinzel_id(home)
    children: list[subprocess.Popen[bytes]] = []
    with _client(home, env, children) as client:
        assert client.get(f"/auth?token={TOKEN}").status_code == 303
        paused = _post(client, hid, verb="pause")
        assert paused.status_code == 200 and paused.json()["state"] == "paused", paused.text
        page = client.get(f"/h/{hid}").text
        assert 'value="unpause"' in page and 'value="wake"' not in page.split('id="pending"')[0]
        refused = _post(client, hid, verb="wake")
        assert refused.status_code >= 400 and refused.json()["code"] == "HZH050"
        assert _post(client, hid, verb="unpause").json()["state"] != "paused"
        before = len(_started(home, hid))
        woke = _post(client, hid, verb="wake")
        assert woke.json() == {"name": "weekly-report", "verb": "wake", "started": True}
        assert children[-1].wait(timeout=120) == 0
        started = _started(home, hid)
        assert len(started) == before + 1 and started[-1].data["cause"] == "asked"
        reply = client.get(f"/h/{hid}/turn/{started[-1].turn}/reply").json()
        assert reply["turn"] == started[-1].turn and reply["said"], reply
        said = "\n".join(reply["said"])
        assert reply["report"] or reply["ended"] in said, reply
        retried = _post(client, hid, verb="retry", hint="shorter, please")
        assert retried.json()["started"] is True, retried.text
        assert children[-1].wait(timeout=120) == 0
        assert _started(home, hid)[-1].data["cause"] == "retry"
        assert _post(client, hid, verb="resume").json()["code"] == "HZH236"
        assert _post(client, hid, verb="explode").json()["code"] == "HZH352"
        assert _post(client, hid, verb="retire").json()["state"] == "retired"
        page = client.get(f"/h/{hid}").text
        assert 'value="unretire"' in page and "Retire…" not in page
    for child in children:
        assert child.returncode == 0


def test_a_failed_turn_shows_its_code_and_hint_with_retry_and_wake(home: Path) -> None:
    provider = fake.Provider("openai", lambda body, n: fake.Http(401))
    env = {
        **demo_env(home),
        "HZ_MODEL": MODEL,
        "HZ_MODEL_FAST": MODEL,
        "HZ_MODEL_BEST": MODEL,
        "HZ_BASE_URL": provider.base_url,
        "OPENAI_API_KEY": "sk-test",
    }
    hid = heinzel_id(home)
    try:
        woke = forkhz.run(
            [sys.executable, "-m", "heinzel", "heinzel", "wake", hid, "--json"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        provider.close()
    ended = json.loads(woke.stdout)
    assert ended["state"] in ("failed", "abandoned") or ended["disposition"] == "failed"
    code = woke.stderr.split(":")[0]
    assert code.startswith("HZ"), woke.stderr
    with _client(home, env, []) as client:
        assert client.get(f"/auth?token={TOKEN}").status_code == 303
        page = client.get(f"/h/{hid}").text
        card = page.split('id="failure"')[1].split("</section>")[0]
        assert code in card and "hint:" in card, card
        assert 'value="retry"' in card and 'value="wake"' in card
        listing = client.get("/").text
        assert "notice-failed" in listing
