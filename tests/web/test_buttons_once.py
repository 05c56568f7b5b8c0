"""The page's Wake and Retry forms carry a request id minted as the page renders them, and
a resend of the same form (a second click, a browser's re-POST, a network retry) is claimed
once, as ``hz heinzel wake|retry --request-id`` is: it starts no second turn and answers
"already delivered" (never an error page) while the first runs or once it ended; after
the first's child was killed (SIGKILL, HZ_CRASH_AT) the resend resumes the turn it left
open, once; the same id sent by the page then by the command is one delivery.

The page's real HTTP path (`heinzel.web.server.create_app`, the forms' fields as a browser
posts them), its turns in real child processes (`heinzel.web.actions`), the command forked
(tests/forkhz.py); the offline model of Priya's week.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from heinzel.app import App
from heinzel.web.actions import spawn_verb
from heinzel.web.server import create_app
from ledger.spine import read_events
from machines.stores.journal import wake_keys
from tests import forkhz
from tests.locks import holding

from .conftest import ORIGIN, TOKEN, demo_env, heinzel_id

FORM = re.compile(
    r'name="verb" value="(wake|retry)"><input type="hidden" name="request_id" value="(rq-\w+)"'
)


def _client(home: Path, env: dict[str, str], children: list[Any]) -> TestClient:
    """The web head over ``home``; each button's child runs with ``env`` as it is when
    the child starts (a test sets HZ_CRASH_AT there for one child)."""

    def start_verb(root: Path, hid: str, verb: str, hint: str, rid: str | None) -> None:
        children.append(spawn_verb(root, hid, verb, hint, dict(env), request_id=rid))

    web = create_app(
        lambda: App.from_environment(str(home), env),
        TOKEN,
        hosts=["testserver"],
        idle_seconds=0,
        start_verb=start_verb,
    )
    client = TestClient(web, follow_redirects=False)
    assert client.get(f"/auth?token={TOKEN}").status_code == 303
    return client


def _forms(client: TestClient, hid: str) -> tuple[str, dict[str, list[str]]]:
    """The page's csrf token and its Wake and Retry forms' request ids, by verb."""
    page = client.get(f"/h/{hid}").text
    csrf = page.split('name="csrf" content="')[1].split('"')[0]
    found: dict[str, list[str]] = {"wake": [], "retry": []}
    for verb, rid in FORM.findall(page):
        found[verb].append(rid)
    return csrf, found


def _send(client: TestClient, hid: str, csrf: str, **form: str) -> tuple[int, dict[str, Any]]:
    """A form as the page's script posts it (the answer as JSON)."""
    headers = {"Origin": ORIGIN, "X-CSRF-Token": csrf, "Accept": "application/json"}
    answer = client.post(f"/h/{hid}/do", data={"csrf": csrf, **form}, headers=headers)
    return answer.status_code, answer.json()


def _turns_of(home: Path, hid: str, rid: str) -> list[str]:
    """The turns started (or skipped) with ``rid`` among their keys (a wake's
    ``<id>@rid``, a retry's ``<id>@retry:rid``)."""
    spine = home / "heinzel" / hid / "session.jsonl"
    found = []
    for event in read_events(spine):
        keys = wake_keys(event.data, event.key)
        started = event.kind in ("turn.started", "turn.skipped")
        if started and any(key.endswith((f"@{rid}", f":{rid}")) for key in keys):
            found.append(str(event.turn))
    return found


def _state(home: Path, hid: str, turn: str) -> str:
    spine = home / "heinzel" / hid / "session.jsonl"
    ends = ("turn.finished", "turn.skipped", "turn.waiting", "turn.abandoned", "turn.failed")
    states = [e.kind for e in read_events(spine) if e.turn == turn and e.kind in ends]
    return states[-1] if states else "running"


def _hz(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return forkhz.run(
        [sys.executable, "-m", "heinzel", *args], env=env, capture_output=True, text=True
    )


def test_each_render_mints_its_own_ids_and_the_parts_hash_ignores_them(home: Path) -> None:
    """Two renders of the page carry different Wake and Retry ids; the live parts' hashes
    (by which the page swaps only what moved) are the same for both."""
    hid = heinzel_id(home)
    children: list[subprocess.Popen[bytes]] = []
    with _client(home, demo_env(home), children) as client:
        _, first = _forms(client, hid)
        _, second = _forms(client, hid)
        assert len(first["wake"]) == 1 and len(first["retry"]) == 1, first
        assert not set(first["wake"] + first["retry"]) & set(second["wake"] + second["retry"])
        parts = [client.get(f"/h/{hid}/parts").json() for _ in range(2)]
        assert parts[0]["actions"]["html"] != parts[1]["actions"]["html"]
        assert parts[0]["actions"]["hash"] == parts[1]["actions"]["hash"]
    assert children == []


def test_a_wake_or_retry_form_sent_again_runs_once(home: Path) -> None:
    """Wake, then the same form again (twice): one turn keyed with its id; the resends
    answer 200 "already delivered (its turn ran then; nothing ran again)" and start no
    child; `hz heinzel wake --request-id` with the page's id is the same delivery. The
    same for Retry (its hint sent again with it). A page rendered after has a new id,
    which wakes anew."""
    env = demo_env(home)
    hid = heinzel_id(home)
    children: list[subprocess.Popen[bytes]] = []
    with _client(home, env, children) as client:
        for verb, extra in (("wake", {}), ("retry", {"hint": "shorter, please"})):
            csrf, forms = _forms(client, hid)
            [rid] = forms[verb]
            form = {"verb": verb, "request_id": rid, **extra}
            status, first = _send(client, hid, csrf, **form)
            assert status == 200 and first["started"] is True, first
            assert children[-1].wait(timeout=120) == 0
            [turn] = _turns_of(home, hid, rid)
            spawned = len(children)
            for _ in range(2):
                status, again = _send(client, hid, csrf, **form)
                assert status == 200, again
                assert again["delivered"].startswith("already delivered (its turn ran then"), again
                assert again["turn"] == turn, again
            assert len(children) == spawned  # nothing started
            cli = _hz(env, "heinzel", verb, hid, *extra.values(), "--request-id", rid, "--json")
            assert cli.returncode == 0, cli.stderr
            said = json.loads(cli.stdout)
            assert said["delivered"].startswith("already delivered") and said["turn"] == turn
            assert _turns_of(home, hid, rid) == [turn]
        csrf, forms = _forms(client, hid)
        [fresh] = forms["wake"]
        status, woke = _send(client, hid, csrf, verb="wake", request_id=fresh)
        assert status == 200 and woke["started"] is True, woke
        assert children[-1].wait(timeout=120) == 0
        assert len(_turns_of(home, hid, fresh)) == 1


def test_the_command_first_then_the_page_is_one_delivery(home: Path) -> None:
    """`hz heinzel wake --request-id R` first, then the page's form with R: "already
    delivered", no child, one turn."""
    env = demo_env(home)
    hid = heinzel_id(home)
    rid = "rq-fromthecommand1"
    ran = _hz(env, "heinzel", "wake", hid, "--request-id", rid, "--json")
    assert ran.returncode == 0, ran.stderr
    [turn] = _turns_of(home, hid, rid)
    children: list[subprocess.Popen[bytes]] = []
    with _client(home, env, children) as client:
        csrf, _ = _forms(client, hid)
        status, said = _send(client, hid, csrf, verb="wake", request_id=rid)
        assert status == 200 and said["turn"] == turn, said
        assert said["delivered"].startswith("already delivered"), said
    assert children == [] and _turns_of(home, hid, rid) == [turn]


def test_a_form_resent_after_its_child_was_killed_resumes_its_turn_once(home: Path) -> None:
    """The first send's child is killed after its turn started (SIGKILL, HZ_CRASH_AT):
    the turn is left open. The resend while another process holds the spine's lock (as
    one running the turn would) answers "already delivered (its turn runs now...)", 200,
    and starts nothing; once the lock is free the resend resumes the left-open turn in
    its child, once (no second turn); a third send runs nothing; the command with the
    same id is the same delivery. The same for Retry."""
    env = demo_env(home)
    hid = heinzel_id(home)
    lock = home / "heinzel" / hid / "lock"
    children: list[subprocess.Popen[bytes]] = []
    with _client(home, env, children) as client:
        for verb, extra in (("wake", {}), ("retry", {"hint": "shorter, please"})):
            csrf, forms = _forms(client, hid)
            [rid] = forms[verb]
            form = {"verb": verb, "request_id": rid, **extra}
            env["HZ_CRASH_AT"] = "after:turn.started"
            status, first = _send(client, hid, csrf, **form)
            del env["HZ_CRASH_AT"]
            assert status == 200 and first["started"] is True, first
            assert children[-1].wait(timeout=120) == 137
            [turn] = _turns_of(home, hid, rid)
            assert _state(home, hid, turn) == "running"
            spawned = len(children)
            with holding(lock):
                status, held = _send(client, hid, csrf, **form)
            assert status == 200, held
            assert held["delivered"].startswith("already delivered (its turn runs now"), held
            assert len(children) == spawned
            status, resumed = _send(client, hid, csrf, **form)
            assert status == 200 and resumed["started"] is True, resumed
            assert resumed["delivered"].startswith("already delivered (its turn, left open")
            assert children[-1].wait(timeout=120) == 0
            assert _turns_of(home, hid, rid) == [turn]
            assert _state(home, hid, turn) != "running"
            spawned = len(children)
            status, third = _send(client, hid, csrf, **form)
            assert status == 200, third
            assert third["delivered"].startswith("already delivered (its turn ran"), third
            assert len(children) == spawned
            cli = _hz(env, "heinzel", verb, hid, *extra.values(), "--request-id", rid, "--json")
            assert cli.returncode == 0, cli.stderr
            assert json.loads(cli.stdout)["turn"] == turn
            assert _turns_of(home, hid, rid) == [turn]
