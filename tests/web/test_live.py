"""The pages move with the spine: a Heinzelmännchen's page gets its parts (head, failure,
actions, waiting card, timeline, lessons) rendered by the server after each batch of lines,
the list page gets its rows from its own stream, and approving a draft from the page starts
its learning turn at once; a second click says it is already approved."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from heinzel.app import App
from tests import forkhz

from .conftest import ORIGIN, demo_env, heinzel_id


def _events(text: str) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for block in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in fields:
            found.append((fields["event"], json.loads(fields["data"])))
    return found


def _hz(home: Path, *args: str) -> None:
    done = forkhz.run(
        [sys.executable, "-m", "heinzel", *args],
        env=demo_env(home),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr


def _seq(client: TestClient, hid: str) -> int:
    return int(client.get(f"/h/{hid}").text.split('data-seq="')[1].split('"')[0])


def _post(client: TestClient, path: str, data: dict[str, str], *, as_json: bool = True) -> Any:
    csrf = client.get("/").text.split('name="csrf" content="')[1].split('"')[0]
    headers = {"Origin": ORIGIN, "X-CSRF-Token": csrf}
    if as_json:
        headers["Accept"] = "application/json"
    return client.post(path, data=data, headers=headers)


def _pending(home: Path, hid: str) -> Any:
    return App.from_environment(str(home), demo_env(home)).service.show(hid)["pending"]


def test_the_page_stream_sends_its_parts_after_the_lines(client: TestClient, home: Path) -> None:
    """A pause by the real `hz heinzel pause` (another process) reaches an open page as its
    line, then the row, then the parts re-rendered: the head says paused and the actions
    offer Unpause instead of Pause and Wake."""
    hid = heinzel_id(home)
    seq = _seq(client, hid)
    _hz(home, "heinzel", "pause", hid)
    events = _events(client.get(f"/h/{hid}/events", headers={"Last-Event-ID": str(seq)}).text)
    kinds = [kind for kind, _ in events]
    assert kinds[kinds.index("line") :] == ["line", "row", "parts"], kinds
    parts = events[-1][1]
    assert set(parts) == {"head", "failure", "actions", "pending", "turns", "lessons"}
    assert 'id="state">paused<' in parts["head"]["html"]
    actions = parts["actions"]["html"]
    assert 'value="unpause"' in actions and 'value="wake"' not in actions
    assert parts == client.get(f"/h/{hid}/parts").json()  # what a button's answer swaps in
    page = client.get(f"/h/{hid}").text  # the page as rendered carries the same hashes
    assert all(f'data-hash="{part["hash"]}"' in page for part in parts.values())


def test_the_list_has_a_stream_of_its_rows(client: TestClient, home: Path) -> None:
    """`/events` sends the list's rows as the list renders them, with the page's filters:
    the state a command changed shows there without a reload."""
    hid = heinzel_id(home)
    before = _events(client.get("/events").text)
    assert [kind for kind, _ in before] == ["rows"]
    assert f'href="/h/{hid}"' in before[0][1]["html"] and "state-paused" not in before[0][1]["html"]
    _hz(home, "heinzel", "pause", hid)
    after = _events(client.get("/events").text)[0][1]["html"]
    assert "state-paused" in after
    assert f'href="/h/{hid}"' not in _events(client.get("/events?state=asleep").text)[0][1]["html"]
    assert client.get("/events?state=sleepy").status_code == 400  # HZH082, as the list says


def test_approving_a_draft_on_the_page_learns_at_once_and_twice_is_not_an_error(
    client: TestClient, home: Path, children: list[subprocess.Popen[bytes]]
) -> None:
    """Approve draft deletes the tag line and starts the learning turn in a child (what the
    next tick would run): the draft leaves "Waiting on you" with no tick. A second click on
    the same draft says it is already approved, as JSON and as the page, never HZH073's
    error page."""
    hid = heinzel_id(home)
    pending = _pending(home, hid)
    assert pending["kind"] == "draft"
    before = App.from_environment(str(home), demo_env(home)).service.show(hid)["turns"]
    approvals = len([t for t in before if t["cause"] == "approval"])
    done = _post(client, f"/h/{hid}/approve", {"item": pending["ref"]})
    assert done.status_code == 200, done.text
    assert done.json()["started"] is True
    assert [child.wait(timeout=120) for child in children] == [0]
    assert _pending(home, hid) is None
    _hz(home, "system", "daemon", "tick")  # the tick finds the approval learned: no second turn
    turns = App.from_environment(str(home), demo_env(home)).service.show(hid)["turns"]
    assert len([t for t in turns if t["cause"] == "approval"]) == approvals + 1, turns
    parts = client.get(f"/h/{hid}/parts").json()
    assert "Approve draft" not in parts["pending"]["html"] and "approval" in parts["turns"]["html"]
    again = _post(client, f"/h/{hid}/approve", {"item": pending["ref"]})
    assert again.status_code == 200 and again.json()["already"] is True, again.text
    plain = _post(client, f"/h/{hid}/approve", {"item": pending["ref"]}, as_json=False)
    assert plain.status_code == 303 and plain.headers["location"].endswith("?said=already-approved")
    page = client.get(plain.headers["location"]).text
    assert "It is already approved" in page and "HZH073" not in page
