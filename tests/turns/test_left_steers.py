"""A chat sent while a turn a dead process left is open, when the resume rules then end that
turn: the chat waits in the inbox (never steered into a turn no model request may follow),
so it becomes a turn of its own, once, never lost; and a chat a turn was steered with never
runs in another (one message, one turn)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from heinzel.session.open_turns import abandon_turn
from heinzel.store.inbox import Inbox
from heinzel.turns import Turns, default_adapters
from ledger.spine import read_events
from machines import Wake, keys
from machines.stores.journal import wake_keys
from tests import forkhz

from .conftest import NOW, hz_env
from .test_delivery import Child

TEXT = "and mention the rollout"

Run = Callable[..., "subprocess.CompletedProcess[str]"]


def kill_in_think(service: Any, heinzel_id: str, tmp_path: Path) -> None:
    """A turn killed in think (its model's first request); its key's request is rq-first."""
    child = Child(service, heinzel_id, tmp_path, "think")
    child.ready()
    child.proc.kill()
    child.proc.communicate(timeout=60)


def killed_in_think(
    service: Any, heinzel_id: str, tmp_path: Path, now: str, *, execd: bool = False
) -> Run:
    """A turn killed in think (`kill_in_think`), and how to run `hz` at ``now``: forked from
    tests/forkhz.py, or the real executable (``execd``)."""
    kill_in_think(service, heinzel_id, tmp_path)
    env = hz_env(service, now)
    start = subprocess.run if execd else forkhz.run

    def run(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return start(
            [forkhz.HZ, *args], env={**env, **extra}, capture_output=True, text=True, check=False
        )

    return run


def queued(run: Run) -> dict[str, Any]:
    """`hz heinzel chat --json` of TEXT while the turn the killed process left is open: its
    reply (queued for that turn's recovery, nothing appended)."""
    chat = run("heinzel", "chat", "notes-digest", TEXT, "--json")
    assert chat.returncode == 0, chat.stderr
    sent: dict[str, Any] = json.loads(chat.stdout)
    assert sent["delivered"].startswith("queued: a turn a stopped process left is open")
    return sent


def ran_alone(service: Any, heinzel_id: str, sent: dict[str, Any], reason: str) -> None:
    """The open turn ended (``reason``) and the chat ran in one drafted turn of its own,
    with its text, and was steered nowhere; nothing is left in the inbox."""
    events = list(read_events(service.home.spine_path(heinzel_id)))
    assert [e for e in events if e.kind == "turn.steered"] == []
    ended = {e.turn: e.data for e in events if e.kind == "turn.finished"}
    assert ended[sent["turn"]]["reason"] == reason
    key = f"{heinzel_id}@{sent['request_id']}"
    [own] = [e for e in events if e.kind == "turn.started" and key in wake_keys(e.data, e.key)]
    assert ended[own.turn]["disposition"] == "drafted"
    assert TEXT in (service.home.turns_dir(heinzel_id) / f"{own.turn}.jsonl").read_text()
    assert Inbox(service.home, heinzel_id).pending() == []


def steered_once(service: Any, heinzel_id: str, sent: dict[str, Any]) -> None:
    """The chat went into the open turn, once: one steer, which a model request of that turn
    received (its text is in the turn's body), no turn of its own; the turn drafted."""
    events = list(read_events(service.home.spine_path(heinzel_id)))
    [steer] = [e for e in events if e.kind == "turn.steered"]
    assert (steer.turn, steer.data["request_id"]) == (sent["turn"], sent["request_id"])
    after = events[events.index(steer) + 1 :]
    assert any(e.kind == "model.request" and e.turn == steer.turn for e in after)
    key = f"{heinzel_id}@{sent['request_id']}"
    assert [e for e in events if e.kind == "turn.started" and key in wake_keys(e.data, e.key)] == []
    ended = {e.turn: e.data for e in events if e.kind == "turn.finished"}
    assert ended[sent["turn"]]["disposition"] == "drafted"
    assert TEXT in (service.home.turns_dir(heinzel_id) / f"{sent['turn']}.jsonl").read_text()
    assert Inbox(service.home, heinzel_id).pending() == []
    assert Inbox.marked(service.home) == {}


@pytest.mark.kill
def test_a_chat_queued_for_a_dead_turn_is_steered_into_its_recovery_once(
    make_service: Callable[..., Any], tmp_path: Path
) -> None:
    """Killed in think; an hour later `hz heinzel chat` queues for the open turn (nothing
    appended, so the turn's running time is not stretched to the chat's hour); the tick's
    recovery resumes it and steers the chat before its next model request; a second tick
    finds nothing left."""
    service, heinzel_id, _ = make_service()
    run = killed_in_think(service, heinzel_id, tmp_path, "2026-10-30T15:00:00Z")
    sent = queued(run)
    for _ in range(2):
        ticked = run("system", "daemon", "tick", "--json")
        assert ticked.returncode == 0 and "Traceback" not in ticked.stderr, ticked.stderr
    steered_once(service, heinzel_id, sent)


@pytest.mark.kill
def test_a_chat_queued_for_a_dead_turn_that_is_then_stopped_runs_a_turn_of_its_own(
    make_service: Callable[..., Any], tmp_path: Path
) -> None:
    """Killed in think; `hz heinzel chat` queues for the open turn and `hz heinzel stop` ends
    it abandoned (stopped): the chat then runs in a turn of its own (the tick's), as it
    would after a live turn's stop."""
    service, heinzel_id, _ = make_service()
    # the real `hz` executable, as a person types chat, stop and the tick
    run = killed_in_think(service, heinzel_id, tmp_path, "2026-10-30T14:01:00Z", execd=True)
    sent = queued(run)
    stopped = run("heinzel", "stop", "notes-digest")
    assert stopped.returncode == 0, stopped.stderr
    ticked = run("system", "daemon", "tick", "--json")
    assert "Traceback" not in ticked.stderr, ticked.stderr
    ran_alone(service, heinzel_id, sent, "stopped")


@pytest.mark.kill
def test_a_chat_steered_into_a_recovery_that_is_killed_is_delivered_by_the_next_once(
    make_service: Callable[..., Any], tmp_path: Path
) -> None:
    """As the first test, but the recovering tick is killed right after its `turn.steered`
    (the claim), before the model request: the next tick resumes that turn again and its
    model receives the chat; nothing steers it again or runs it in a turn of its own."""
    service, heinzel_id, _ = make_service()
    run = killed_in_think(service, heinzel_id, tmp_path, "2026-10-30T14:01:00Z")
    sent = queued(run)
    killed = run("system", "daemon", "tick", HZ_CRASH_AT="after:turn.steered")
    assert killed.returncode == 137, killed.stderr
    again = run("heinzel", "chat", "notes-digest", TEXT, "--request-id", sent["request_id"])
    assert again.returncode == 0, again.stderr
    assert f"delivered into turn {sent['turn']}" in again.stdout
    for _ in range(2):
        ticked = run("system", "daemon", "tick", "--json")
        assert ticked.returncode == 0 and "Traceback" not in ticked.stderr, ticked.stderr
    steered_once(service, heinzel_id, sent)


@pytest.mark.kill
def test_a_chat_already_steered_by_a_resume_is_not_steered_again_by_its_sender(
    make_service: Callable[..., Any], tmp_path: Path
) -> None:
    """Killed in think with a chat in the inbox; the tick's recovery steers it, its model
    receives it, and that tick is killed; `hz heinzel chat` of the same request then finds
    it steered already: one steer, no turn of its own, one model run."""
    service, heinzel_id, _ = make_service()
    run = killed_in_think(service, heinzel_id, tmp_path, "2026-10-30T14:01:00Z")
    Inbox(service.home, heinzel_id).write("rq-0000again", "chat", TEXT, at=NOW)
    killed = run("system", "daemon", "tick", HZ_CRASH_AT="after:model.request")
    assert killed.returncode == 137, killed.stderr
    chat = run("heinzel", "chat", "notes-digest", TEXT, "--request-id", "rq-0000again")
    assert chat.returncode == 0, chat.stderr
    for _ in range(2):
        ticked = run("system", "daemon", "tick", "--json")
        assert "Traceback" not in ticked.stderr, ticked.stderr
    events = list(read_events(service.home.spine_path(heinzel_id)))
    steers = [e for e in events if e.kind == "turn.steered"]
    assert [e.data["request_id"] for e in steers] == ["rq-0000again"]
    key = f"{heinzel_id}@rq-0000again"
    assert [e for e in events if e.kind == "turn.started" and key in wake_keys(e.data, e.key)] == []
    assert Inbox(service.home, heinzel_id).pending() == []


@pytest.mark.kill
def test_wakes_that_resume_a_dead_turn_start_no_turn_for_a_chat_it_received(
    make_service: Callable[..., Any], tmp_path: Path
) -> None:
    """Wakes run together, one the key of a turn a killed process left, one a pending chat:
    the resumed turn is steered with the chat and its model receives it, so no turn of the
    chat's own starts after it (one run per chat; found by the chaos test, seed 110)."""
    service, heinzel_id, _ = make_service()
    kill_in_think(service, heinzel_id, tmp_path)  # its turn's key: rq-first
    Inbox(service.home, heinzel_id).write("rq-second", "chat", TEXT, at=NOW)
    wakes = [Wake("asked", keys.asked(heinzel_id, rid)) for rid in ("rq-first", "rq-second")]
    states = Turns(service).run_wakes(
        heinzel_id, wakes, adapters=default_adapters(service.settings)
    )
    events = list(read_events(service.home.spine_path(heinzel_id)))
    [resumed] = {e.turn for e in events if e.kind == "turn.resumed"}
    assert [(s.turn, s.disposition) for s in states] == [(resumed, "drafted")]
    steered = [(e.turn, e.data["request_id"]) for e in events if e.kind == "turn.steered"]
    assert steered == [(resumed, "rq-second")]
    second = keys.asked(heinzel_id, "rq-second")
    started = [e for e in events if e.kind == "turn.started"]
    assert [e.turn for e in started if second in wake_keys(e.data, e.key)] == []
    body = (service.home.turns_dir(heinzel_id) / f"{resumed}.jsonl").read_text()
    assert TEXT in body
    assert Inbox(service.home, heinzel_id).pending() == []


@pytest.mark.kill
def test_a_chat_queued_for_a_dead_turn_that_is_then_superseded_runs_a_turn_of_its_own(
    make_service: Callable[..., Any], tmp_path: Path
) -> None:
    """Killed in think; `hz heinzel chat` queues for the open turn, which the tick's team
    gate then ends abandoned (superseded: another machine's receipt has its slot): the chat
    keeps its inbox mark and the next tick runs it in a turn of its own, once, never lost."""
    service, heinzel_id, _ = make_service()
    run = killed_in_think(service, heinzel_id, tmp_path, "2026-10-30T14:01:00Z")
    sent = queued(run)
    abandon_turn(service, heinzel_id, sent["turn"], "superseded")  # as Tick._wake does
    assert sent["request_id"] in Inbox.marked(service.home)[heinzel_id]
    for _ in range(2):
        ticked = run("system", "daemon", "tick", "--json")
        assert "Traceback" not in ticked.stderr, ticked.stderr
    ran_alone(service, heinzel_id, sent, "superseded")
    assert Inbox.marked(service.home) == {}
