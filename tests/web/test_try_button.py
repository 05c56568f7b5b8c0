"""The amendment card's "Try it on the last turns": the page runs `hz heinzel try` on the
amendment the user filed with the real `hz heinzel amend`, in a child process, and answers
at once with the trial's own page, which shows each placed draft beside the tried one once
the child is done, placing nothing and starting no turn."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from starlette.testclient import TestClient

from heinzel.web.actions import spawn_verb
from ledger.spine import read_events
from tests import forkhz

from .conftest import ORIGIN, TOKEN, demo_env, heinzel_id, web_app


def _amend(home: Path, hid: str) -> None:
    contract = home / "heinzel" / hid / "contract"
    latest = max(contract.glob("v*.prose.md"), key=lambda p: int(p.name[1:].split(".")[0]))
    amended = home / "v-next.prose.md"
    amended.write_text(
        latest.read_text(encoding="utf-8") + "- [ ] the section has at most 12 lines\n"
    )
    filed = forkhz.run(
        [sys.executable, "-m", "heinzel", "heinzel", "amend", hid, "--from", str(amended)],
        env=demo_env(home),
        capture_output=True,
        text=True,
        check=False,
    )
    assert filed.returncode == 0, filed.stderr


def _headers(client: TestClient) -> dict[str, str]:
    csrf = client.get("/").text.split('name="csrf" content="')[1].split('"')[0]
    return {"Origin": ORIGIN, "X-CSRF-Token": csrf}


def test_the_amendment_card_tries_it_on_the_last_turns(
    client: TestClient, home: Path, children: list[subprocess.Popen[bytes]]
) -> None:
    hid = heinzel_id(home)
    _amend(home, hid)
    assert "Try it on the last turns" in client.get(f"/h/{hid}").text
    spine = home / "heinzel" / hid / "session.jsonl"
    before = spine.read_bytes()
    report = home / "priya" / "weekly-report.md"
    document = report.read_bytes()
    sent = client.post(f"/h/{hid}/try", data={"turns": "2"}, headers=_headers(client))
    assert sent.status_code == 303, sent.text
    location = sent.headers["location"]
    assert location.startswith(f"/h/{hid}/try/tr-")
    [child] = children
    assert child.wait(timeout=120) == 0
    page = client.get(location)
    assert page.status_code == 200, page.text
    assert "2 turns tried under v" in page.text and "the section has at most 12 lines" in page.text
    assert page.text.count("<th>placed</th><th>tried</th>") == 2
    assert report.read_bytes() == document and spine.read_bytes().startswith(before)
    added = [e for e in read_events(spine) if e.seq > before.count(b"\n")]
    assert added and all(e.kind == "usage" and e.data["kind"] == "trial" for e in added)


def test_the_request_answers_before_the_trial_runs(home: Path) -> None:
    """The button's request starts the trial and returns: nothing of it runs inside the
    request (the spine is as it was while the child has not run), its page says it is
    still trying and asks the browser to reload; once the child ran, the side by side."""
    hid = heinzel_id(home)
    _amend(home, hid)
    asked: list[tuple[Path, str, str, str]] = []
    spine = home / "heinzel" / hid / "session.jsonl"
    before = spine.read_bytes()
    held = web_app(home, [])
    for route in held.routes:
        views = getattr(getattr(route, "endpoint", None), "__self__", None)
        if views is not None:
            views.start_verb = lambda *args: asked.append(args)
    with TestClient(held, follow_redirects=False) as client:
        assert client.get(f"/auth?token={TOKEN}").status_code == 303
        headers = {**_headers(client), "Accept": "application/json"}
        sent = client.post(f"/h/{hid}/try", data={"turns": "1"}, headers=headers)
        assert sent.status_code == 202, sent.text
        location = sent.json()["location"]
        assert spine.read_bytes() == before  # nothing ran in the request
        [(root, who, verb, hint, _)] = asked
        assert (who, verb) == (hid, "try")
        waiting = client.get(location)
        assert waiting.status_code == 200 and "Trying it on the last turns" in waiting.text
        assert waiting.headers["refresh"] == "2"
        assert client.get(location, headers={"Accept": "application/json"}).json() == {
            "state": "running"
        }
        child = spawn_verb(root, who, verb, hint, demo_env(home))
        assert child.wait(timeout=120) == 0
        done = client.get(location, headers={"Accept": "application/json"}).json()
        assert done["summary"].startswith("1 turn tried under v"), done
        assert "1 turn tried under v" in client.get(location).text


def test_a_trial_whose_child_died_says_so(home: Path) -> None:
    """The child is killed at its first usage line (HZ_CRASH_AT): the trial's page says
    HZH504, not "still trying" for ever; a ticket the web head never gave is HZH503."""
    hid = heinzel_id(home)
    _amend(home, hid)
    children: list[subprocess.Popen[bytes]] = []
    crashing = {**demo_env(home), "HZ_CRASH_AT": "before-index:usage"}
    with TestClient(web_app(home, children, crashing), follow_redirects=False) as client:
        assert client.get(f"/auth?token={TOKEN}").status_code == 303
        sent = client.post(f"/h/{hid}/try", data={"turns": "1"}, headers=_headers(client))
        assert sent.status_code == 303, sent.text
        [child] = children
        assert child.wait(timeout=120) == 137
        page = client.get(sent.headers["location"], headers={"Accept": "application/json"})
        assert page.status_code == 400 and page.json()["code"] == "HZH504", page.text
        assert "HZH504" in client.get(sent.headers["location"]).text
        unknown = client.get(f"/h/{hid}/try/tr-01ABCDEFGHJKMNPQRSTVWXYZ01")
        assert unknown.status_code == 404 and "HZH503" in unknown.text
