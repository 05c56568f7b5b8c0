"""A chat or a stop sent while another process runs the turn, delivered by that process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from heinzel.service import Service
from heinzel.store.inbox import Inbox
from heinzel.tick import Tick
from heinzel.tick.verbs import Verbs
from heinzel.turns import Turns, default_adapters
from ledger.spine import read_events
from machines import Wake, keys
from machines.stores.journal import expand_carried, wake_causes, wake_keys
from tests import forkhz

from .conftest import NOW, hz_env

SCRIPT = Path(__file__).parent / "delivery_turn.py"
TEXT = "keep it under ten lines"


class Child:
    """``delivery_turn.py`` in its own process, met at its FIFO rendezvous."""

    def __init__(self, service: Service, heinzel_id: str, sync: Path, where: str) -> None:
        os.mkfifo(sync / "ready")
        os.mkfifo(sync / "go")
        self.sync = sync
        Inbox(service.home, heinzel_id).write("rq-first", "chat", "draft it", at=NOW)
        command = [sys.executable, str(SCRIPT), str(service.home.root), heinzel_id, str(sync)]
        self.proc = forkhz.Popen(
            [*command, where], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    def ready(self) -> None:
        """Block until the child is at its rendezvous (fail if it dies first)."""
        box: list[str] = []
        reader = threading.Thread(target=lambda: box.append((self.sync / "ready").read_text()))
        reader.start()
        reader.join(60)
        if reader.is_alive():
            self.proc.kill()
            with (self.sync / "ready").open("w"):
                pass
            reader.join()
            raise AssertionError(self.proc.communicate()[1])

    def go(self) -> list[list[Any]]:
        """Let the child go on; the states it ran (turn, state, disposition, reason)."""
        with (self.sync / "go").open("w") as go:
            go.write("go\n")
        out, err = self.proc.communicate(timeout=60)
        assert self.proc.returncode == 0, err
        result: list[list[Any]] = json.loads(out.strip().splitlines()[-1])
        return result


def _events(service: Service, heinzel_id: str, kind: str) -> list[Any]:
    path = service.home.spine_path(heinzel_id)
    return [e for e in expand_carried(read_events(path)) if e.kind == kind]


def _verbs(service: Service) -> Verbs:
    return Verbs(service, Turns(service), default_adapters(service.settings))


@pytest.mark.kill
class TestDelivery:
    """The running host takes the inbox at its step boundaries and before model requests."""

    def test_a_chat_during_think_reaches_the_next_model_request(
        self, make_service: Callable[..., Any], tmp_path: Path
    ) -> None:
        """The text is in the model's second request, not its first; one turn.steered."""
        service, heinzel_id, _ = make_service()
        child = Child(service, heinzel_id, tmp_path, "think")
        child.ready()
        answer = _verbs(service).chat("notes-digest", TEXT)
        assert answer["delivered"] == "queued for the running turn"
        states = child.go()
        assert [s[2] for s in states] == ["drafted"]
        assert TEXT not in (tmp_path / "request-1.json").read_text()
        assert TEXT in (tmp_path / "request-2.json").read_text()
        steered = _events(service, heinzel_id, "turn.steered")
        assert [e.data["request_id"] for e in steered] == [answer["request_id"]]
        assert TEXT not in service.home.spine_path(heinzel_id).read_text()
        assert Inbox(service.home, heinzel_id).pending() == []

    def test_a_chat_during_act_becomes_one_follow_up_turn(
        self, make_service: Callable[..., Any], tmp_path: Path
    ) -> None:
        """turn.requested once, then one asked turn keyed by the request, after the first."""
        service, heinzel_id, _ = make_service()
        child = Child(service, heinzel_id, tmp_path, "act")
        child.ready()
        request = _verbs(service).chat("notes-digest", TEXT)["request_id"]
        states = child.go()
        assert [s[2] for s in states] == ["drafted", "drafted"]
        key = f"{heinzel_id}@{request}"
        [requested] = _events(service, heinzel_id, "turn.requested")
        assert (requested.turn, requested.key) == (states[0][0], key)
        started = _events(service, heinzel_id, "turn.started")
        assert [(e.turn, e.data["cause"], e.key) for e in started][1:] == [
            (states[1][0], "asked", key)
        ]
        assert _events(service, heinzel_id, "turn.steered") == []
        assert Inbox(service.home, heinzel_id).pending() == []

    def test_a_stop_ends_the_turn_abandoned_stopped(
        self, make_service: Callable[..., Any], tmp_path: Path
    ) -> None:
        """The stop is honoured before the next model request; nothing runs after."""
        service, heinzel_id, _ = make_service()
        child = Child(service, heinzel_id, tmp_path, "think")
        child.ready()
        assert _verbs(service).stop("notes-digest")["stop"].startswith("requested")
        [[turn, state, disposition, reason]] = child.go()
        assert (state, disposition, reason) == ("abandoned", "abandoned", "stopped")
        [finished] = _events(service, heinzel_id, "turn.finished")
        assert (finished.turn, finished.data["reason"], finished.data["step"]) == (
            turn,
            "stopped",
            "think",
        )
        assert not (tmp_path / "request-2.json").exists()
        assert Inbox(service.home, heinzel_id).pending() == []

    def test_a_message_queued_to_a_killed_process_is_delivered_once(
        self, make_service: Callable[..., Any], tmp_path: Path
    ) -> None:
        """Killed in think with the chat queued: the tick's recovery steers it, once (the
        tick may wake other causes too, never the request's key)."""
        service, heinzel_id, _ = make_service()
        child = Child(service, heinzel_id, tmp_path, "think")
        child.ready()
        request = _verbs(service).chat("notes-digest", TEXT)["request_id"]
        child.proc.kill()
        child.proc.communicate(timeout=60)
        adapters = default_adapters(service.settings)
        for _ in range(2):
            Tick(service, Turns(service), adapters, sleep=lambda _s: None).run()
        steered = _events(service, heinzel_id, "turn.steered")
        assert [e.data["request_id"] for e in steered] == [request]
        started, *others = _events(service, heinzel_id, "turn.started")
        assert all(f"{heinzel_id}@{request}" not in wake_keys(e.data, e.key) for e in others)
        finished = _events(service, heinzel_id, "turn.finished")[0]
        assert (finished.turn, finished.data["disposition"]) == (started.turn, "drafted")
        body = (service.home.turns_dir(heinzel_id) / f"{started.turn}.jsonl").read_text()
        assert TEXT in body
        assert Inbox(service.home, heinzel_id).pending() == []


class TestLeftRequests:
    """Requests no running turn takes: a chat left pending (the tick wakes it once), an
    unreadable file, a stop for a turn that already ended."""

    def test_a_pending_chat_wakes_once(self, make_service: Callable[..., Any]) -> None:
        """Two ticks: one turn has the request's key (coalesced with what else was due)
        and its message as an input; the request is taken, its mark dropped, and it is
        never woken again."""
        service, heinzel_id, _ = make_service()
        Inbox(service.home, heinzel_id).write("rq-late", "chat", TEXT, at=NOW)
        adapters = default_adapters(service.settings)
        for _ in range(2):
            Tick(service, Turns(service), adapters, sleep=lambda _s: None).run()
        started = _events(service, heinzel_id, "turn.started")
        asked = [(e.turn, c["key"]) for e in started for c in wake_causes(e.data, e.key)]
        [(turn, _)] = [a for a in asked if a[1] == f"{heinzel_id}@rq-late"]
        body = (service.home.turns_dir(heinzel_id) / f"{turn}.jsonl").read_text()
        assert TEXT in body
        assert Inbox(service.home, heinzel_id).pending() == []
        assert Inbox.marked(service.home) == {}

    def test_an_unreadable_inbox_file_is_reported_not_fatal(
        self, make_service: Callable[..., Any]
    ) -> None:
        """A garbled request: the tick reports HZH233, and a running turn still finishes."""
        service, heinzel_id, _ = make_service()
        inbox = service.home.inbox_dir(heinzel_id)
        inbox.mkdir(mode=0o700, parents=True, exist_ok=True)
        (inbox / "rq-bad.json").write_text("{not json", encoding="utf-8")
        marks = Inbox(service.home, heinzel_id).marks
        marks.mkdir(mode=0o700)
        (marks / f"{heinzel_id}@rq-bad").touch()
        adapters = default_adapters(service.settings)
        report = Tick(service, Turns(service), adapters, sleep=lambda _s: None).run()
        assert {"id": heinzel_id, "code": "HZH233"}.items() <= report.errors[-1].items()
        wake = Wake("asked", keys.asked(heinzel_id, "rq-ok"))
        [state] = Turns(service).run_wakes(heinzel_id, [wake], adapters=adapters)
        assert state.disposition == "drafted"

    def test_a_stop_for_an_ended_turn_is_stale(self, make_service: Callable[..., Any]) -> None:
        """A stop naming another turn is only taken; the running turn goes on to its draft."""
        service, heinzel_id, _ = make_service()
        Inbox(service.home, heinzel_id).write("rq-stop", "stop", "tn-ended", at=NOW)
        wake = Wake("asked", keys.asked(heinzel_id, "rq-go"))
        [state] = Turns(service).run_wakes(
            heinzel_id, [wake], adapters=default_adapters(service.settings)
        )
        assert state.disposition == "drafted"
        assert Inbox(service.home, heinzel_id).pending() == []


def _waiting_for_lock(process: subprocess.Popen[str], lock: Path) -> None:
    """Block until ``process`` holds the spine's lock file open (it waits for the lock,
    past its check for a running turn); fail if it exits first."""
    fds = Path(f"/proc/{process.pid}/fd")
    for _ in range(6000):
        assert process.poll() is None, process.communicate()
        try:
            if any(os.readlink(fd) == str(lock) for fd in fds.iterdir()):
                return
        except FileNotFoundError:
            continue
        threading.Event().wait(0.01)
    raise AssertionError(f"{process.args} never waited for {lock}")


@pytest.mark.kill
def test_two_chats_at_once_are_each_delivered_once(
    make_service: Callable[..., Any], tmp_path: Path
) -> None:
    """Two `hz heinzel chat` processes sent while a turn is about to start wait for the
    lock; that turn is steered with both, so neither runs a turn of its own: one model
    run, one turn, each request steered once (issue 11, finding 4)."""
    service, heinzel_id, _ = make_service()
    sync = tmp_path / "sync"
    sync.mkdir()
    child = Child(service, heinzel_id, sync, "start")
    child.ready()
    env, hz = hz_env(service), forkhz.HZ
    chats = [
        forkhz.Popen(
            [hz, "heinzel", "chat", "notes-digest", f"{TEXT} ({n})"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in (1, 2)
    ]
    for chat in chats:
        _waiting_for_lock(chat, service.home.session_dir(heinzel_id) / "lock")
    [[turn, _, disposition, _]] = child.go()
    assert disposition == "drafted"
    for chat in chats:
        out, err = chat.communicate(timeout=120)
        assert chat.returncode == 0, err
        assert f"delivered: delivered into turn {turn} (steered into it" in out
    started = _events(service, heinzel_id, "turn.started")
    assert [e.turn for e in started] == [turn]
    steered = [e.data["request_id"] for e in _events(service, heinzel_id, "turn.steered")]
    assert len(steered) == len(set(steered)) == 2
    assert not (sync / "request-3.json").exists()  # two model requests, one turn's
    assert Inbox(service.home, heinzel_id).pending() == []


@pytest.mark.kill
def test_a_chat_steered_into_a_turn_a_dead_process_left_is_not_steered_again(
    make_service: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A turn killed right after it was steered with a chat leaves that request untaken; the
    `hz heinzel chat` that waited for the lock meanwhile runs its own turn, which must not
    steer the same request again: the open turn's resume delivers it, to that turn only."""
    service, heinzel_id, _ = make_service()
    Inbox(service.home, heinzel_id).write("rq-0000early", "chat", TEXT, at=NOW)
    sync = tmp_path / "sync"
    sync.mkdir()
    monkeypatch.setenv("HZ_CRASH_AT", "after:turn.steered")
    child = Child(service, heinzel_id, sync, "start")  # holds the lock before its turn starts
    monkeypatch.delenv("HZ_CRASH_AT")
    child.ready()
    env, hz = hz_env(service), forkhz.HZ
    chat = forkhz.Popen(
        [hz, "heinzel", "chat", "notes-digest", "and the second thing"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _waiting_for_lock(chat, service.home.session_dir(heinzel_id) / "lock")  # no turn ran yet
    with (sync / "go").open("w") as go:
        go.write("go\n")
    _, err = child.proc.communicate(timeout=60)
    assert child.proc.returncode == 137, err  # killed right after its first steer
    _, err = chat.communicate(timeout=120)
    assert chat.returncode == 0, err
    adapters = default_adapters(service.settings)
    for _ in range(2):
        Tick(service, Turns(service), adapters, sleep=lambda _s: None).run()
    steered = _events(service, heinzel_id, "turn.steered")
    early = [e for e in steered if e.data["request_id"] == "rq-0000early"]
    assert len(early) == 1, [e.turn for e in early]
    finished = {
        e.turn: e.data["disposition"] for e in _events(service, heinzel_id, "turn.finished")
    }
    assert finished[early[0].turn] == "drafted"  # the killed turn resumed and received it
    body = (service.home.turns_dir(heinzel_id) / f"{early[0].turn}.jsonl").read_text()
    assert TEXT in body
    assert Inbox(service.home, heinzel_id).pending() == []


@pytest.mark.kill
def test_a_handed_approval_of_a_draft_replaced_by_the_same_text_is_taken(
    make_service: Callable[..., Any], tmp_path: Path
) -> None:
    """A draft approved in the document while a turn runs in another process: the tick hands
    the approval to that turn, which then places a draft of the same text (so of the same
    approval key). The older draft's approval counts for nothing (a superseded notice), and
    the handed request is taken: the next ticks are quiet, not woken by it forever."""
    service, heinzel_id, _ = make_service()
    sync = tmp_path / "sync"
    sync.mkdir()
    Inbox(service.home, heinzel_id).write("rq-0000draft", "chat", "draft it", at=NOW)
    first = forkhz.run(
        [sys.executable, str(SCRIPT), str(service.home.root), heinzel_id, str(sync), "draft"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert first.returncode == 0, first.stderr
    env, hz = hz_env(service), forkhz.HZ

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return forkhz.run([hz, *args], env=env, capture_output=True, text=True, check=False)

    approved = run("approve", "notes-digest")
    assert approved.returncode == 0, approved.stderr
    for path in sync.iterdir():
        path.unlink()
    child = Child(service, heinzel_id, sync, "think")  # holds the lock in think
    child.ready()
    handing = run("system", "daemon", "tick", "--json")
    assert handing.returncode == 0, handing.stderr
    [handed] = json.loads(handing.stdout)["handed"]
    assert handed["causes"] == ["approval"]
    [key] = handed["keys"]
    states = child.go()
    assert [s[2] for s in states] == ["drafted"]
    placed = _events(service, heinzel_id, "draft.placed")
    assert len({e.data["hash"] for e in placed}) == 1 < len(placed)  # the same text twice
    reports = []
    for _ in range(2):
        ticked = run("system", "daemon", "tick", "--json")
        assert ticked.returncode == 0, ticked.stderr
        reports.append(json.loads(ticked.stdout))
    assert [w for r in reports for w in r["woken"] if key in json.dumps(w)] == []
    notices = _events(service, heinzel_id, "notice.posted")
    assert [e.data["reason"] for e in notices] == ["superseded"]
    assert Inbox(service.home, heinzel_id).pending() == []
    assert Inbox.marked(service.home) == {}
