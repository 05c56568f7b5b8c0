"""One message, one turn (ADR 0049 statements 13-14): a chat racing another running turn is
delivered exactly once, says where it went, and never asks to be sent again.

Real `hz` processes on the worked example's home. The races are made deterministic: the
turn the chat races is a real tick paused at a FIFO once it holds the spine's lock
(tests/tick/paused_tick.py), and the chat is seen waiting for that lock (its descriptor
in /proc) before the tick goes on; or the test holds the lock itself. Each chat's clock
is a moment after the tick's, as a person's message comes after the tick started.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from heinzel.store.home import Home
from heinzel.store.inbox import Inbox
from ledger.reading import read_events
from tests import forkhz
from tests.hz_mcp.client import session
from tests.locks import holding
from tests.turns.test_delivery import _waiting_for_lock
from tests.waits import HANG

from .homes import FRIDAY, HZ, chat_claims, env, hz, make_home, tick

CHAT_ROUNDS = int(os.environ.get("HZ_SOAK_CHAT_ROUNDS", "4"))
"""Rounds of the tick-and-chat race: both kinds twice in `make test`, 20 in `make soak`."""

PAUSED = Path(__file__).parent / "paused_tick.py"


def _at(now: str, **delta: float) -> str:
    moment = datetime.fromisoformat(now.replace("Z", "+00:00")) + timedelta(**delta)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class PausedTick:
    """`paused_tick.py` in its own process at ``now``, met at its FIFO rendezvous."""

    def __init__(self, root: Path, sync: Path, now: str, where: str) -> None:
        sync.mkdir()
        os.mkfifo(sync / "ready")
        os.mkfifo(sync / "go")
        self.sync = sync
        self.proc = forkhz.Popen(
            [sys.executable, str(PAUSED), str(sync), where],
            cwd=root,
            env=env(root, now),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def ready(self) -> None:
        """Block until the tick is at its rendezvous (fail if it dies first)."""
        box: list[str] = []
        reader = threading.Thread(target=lambda: box.append((self.sync / "ready").read_text()))
        reader.start()
        for _ in range(2400):  # at most two minutes, ended early by the tick's exit
            if not reader.is_alive() or self.proc.poll() is not None:
                break
            reader.join(0.05)
        if reader.is_alive():
            self.proc.kill()
            with (self.sync / "ready").open("w"):
                pass
            reader.join()
            raise AssertionError(self.proc.communicate()[1])

    def go(self) -> dict[str, Any]:
        """Let the tick go on; its report."""
        with (self.sync / "go").open("w") as go:
            go.write("go\n")
        out, err = self.proc.communicate(timeout=120)
        assert self.proc.returncode == 0, err
        assert "Traceback" not in err, err
        report: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
        return report


def _chat(root: Path, now: str, text: str, **extra: str) -> subprocess.Popen[str]:
    """`hz heinzel chat report-0 TEXT --json` at ``now``, started (not waited for)."""
    return forkhz.Popen(
        [HZ, "heinzel", "chat", "report-0", text, "--json"],
        cwd=root,
        env=env(root, now, **extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _answer(chat: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = chat.communicate(timeout=120)
    assert chat.returncode == 0, err
    assert "Traceback" not in err, err
    answer: dict[str, Any] = json.loads(out)
    return answer


def _tick_turns(report: dict[str, Any]) -> list[str]:
    return [e["turn"] for w in report["woken"] for e in w["ended"]]


def _lock(root: Path, heinzel: str) -> Path:
    return Home(root / "home").session_dir(heinzel) / "lock"


@pytest.mark.kill
def test_a_chat_steered_while_it_waits_for_the_lock_runs_no_turn_of_its_own(
    tmp_path: Path,
) -> None:
    """A tick holds the lock at a due slot; a chat a moment later waits for it; the tick's
    turn is steered with the chat before its model request. The chat then runs nothing,
    exits 0 and says which turn it went into (in --json too); on the spine one claim."""
    root, (heinzel,) = make_home(tmp_path, 1)
    paused = PausedTick(root, tmp_path / "sync", FRIDAY, "start")
    paused.ready()
    chat = _chat(root, _at(FRIDAY, seconds=1.5), "keep it under ten lines")
    _waiting_for_lock(chat, _lock(root, heinzel))
    [turn] = _tick_turns(paused.go())
    answer = _answer(chat)
    assert answer["delivered"] == (
        f"delivered into turn {turn} (steered into it while this waited for the lock)"
    )
    assert answer["turn"] == turn
    rid = answer["request_id"]
    assert chat_claims(root, heinzel) == {rid: 1}
    events = list(read_events(Home(root / "home").spine_path(heinzel)))
    [steer] = [e for e in events if e.kind == "turn.steered"]
    assert (steer.turn, steer.key) == (turn, f"{heinzel}@{rid}")
    after = events[events.index(steer) + 1 :]
    assert any(e.kind == "model.request" and e.turn == turn for e in after)  # it received it
    assert [e.turn for e in events if e.kind == "turn.started"] == [turn]
    body = (Home(root / "home").turns_dir(heinzel) / f"{turn}.jsonl").read_text()
    assert "keep it under ten lines" in body
    assert Inbox(Home(root / "home"), heinzel).pending() == []

    async def resend(s: ClientSession) -> Any:  # MCP heinzel_chat with the same request id
        arguments = {"name": "report-0", "text": "keep it under ten lines", "request_id": rid}
        return await s.call_tool("heinzel_chat", arguments)

    result = session(env(root, _at(FRIDAY, minutes=1)), root, resend)
    assert not result.is_error, result
    sent = result.structured_content
    assert sent["delivered"].startswith(f"delivered into turn {turn} (steered into it before")
    assert sent["turn"] == turn
    assert chat_claims(root, heinzel) == {rid: 1}


@pytest.mark.kill
def test_a_chat_that_cannot_get_the_lock_is_queued_never_to_be_sent_again(
    tmp_path: Path,
) -> None:
    """The tick holds the lock past the chat's lock_timeout: the chat exits 0 saying its
    message is queued (never HZL010's "retry"), and the running turn delivers it, once."""
    root, (heinzel,) = make_home(tmp_path, 1)
    (root / "quick.toml").write_text('[heinzel]\nlock_timeout = "1s"\n', encoding="utf-8")
    paused = PausedTick(root, tmp_path / "sync", FRIDAY, "start")
    paused.ready()
    chat = _chat(root, _at(FRIDAY, seconds=1.5), "and the rollout", HZ_CONFIG="quick.toml")
    answer = _answer(chat)  # gave up waiting for the lock the paused tick holds
    assert answer["delivered"].startswith("queued: a turn runs in another process")
    assert "HZL010" not in json.dumps(answer)
    [turn] = _tick_turns(paused.go())
    assert chat_claims(root, heinzel) == {answer["request_id"]: 1}
    events = read_events(Home(root / "home").spine_path(heinzel))
    assert [e.turn for e in events if e.kind == "turn.steered"] == [turn]
    assert tick(root, HZ_NOW=_at(FRIDAY, minutes=5))["woken"] == []  # nothing left to deliver


@pytest.mark.kill
@pytest.mark.slow
def test_a_tick_at_a_due_slot_with_a_chat_a_moment_later_delivers_each_chat_once(
    tmp_path: Path,
) -> None:
    """Rounds (4 in `make test`, ``HZ_SOAK_CHAT_ROUNDS``, 20 in `make soak`), each of both
    kinds in turn: a tick at the next due slot, paused with the lock held (before its
    turn, or before its outcome step, after its model requests), and a chat 1.5 s later.
    Each chat has exactly one claim on the spine (steered into the tick's turn, or a turn
    of its own, never both) and each answer says where it went."""
    root, (heinzel,) = make_home(tmp_path, 1)
    start = datetime.fromisoformat(FRIDAY.replace("Z", "+00:00"))
    sent = []
    for round_ in range(CHAT_ROUNDS):
        now = (start + timedelta(days=7 * round_)).strftime("%Y-%m-%dT%H:%M:%SZ")
        where = ("start", "outcome")[round_ % 2]
        paused = PausedTick(root, tmp_path / f"sync-{round_}", now, where)
        paused.ready()
        chat = _chat(root, _at(now, seconds=1.5), f"note {round_}")
        if where == "start":
            _waiting_for_lock(chat, _lock(root, heinzel))
            turns = _tick_turns(paused.go())
            answer = _answer(chat)
            assert chat_claims(root, heinzel)[answer["request_id"]] == 1, answer
            assert answer["delivered"].startswith(f"delivered into turn {turns[0]} "), answer
        else:
            answer = _answer(chat)  # the tick's turn is running: queued for it at once
            assert answer["delivered"] == "queued for the running turn", answer
            turns = _tick_turns(paused.go())
            assert len(turns) == 2, turns  # the tick's turn, then the chat's own
        sent.append(answer["request_id"])
    claims = chat_claims(root, heinzel)
    assert {rid: claims[rid] for rid in sent} == dict.fromkeys(sent, 1)
    assert Inbox(Home(root / "home"), heinzel).pending() == []
    assert tick(root, HZ_NOW=_at(now, minutes=5))["woken"] == []  # nothing left to deliver
    assert Inbox.marked(Home(root / "home")) == {}


@pytest.mark.kill
@pytest.mark.parametrize("killed", ["waiting for the lock", "after its turn.started"])
def test_a_chat_killed_after_its_inbox_write_is_delivered_once_by_the_next_tick(
    tmp_path: Path, killed: str
) -> None:
    """SIGKILL while it waits for the lock (the test holds it: the message is only in the
    inbox), or right after its own turn's `turn.started` (its claim): the next ticks deliver
    it exactly once (its own turn, run or resumed), never lost, never twice."""
    root, (heinzel,) = make_home(tmp_path, 1)
    later = _at(FRIDAY, seconds=1.5)
    assert tick(root)["woken"]  # the due slot drafted first: the chat is alone after
    if killed == "waiting for the lock":
        with holding(_lock(root, heinzel)):
            chat = _chat(root, later, "mention the rollout")
            _waiting_for_lock(chat, _lock(root, heinzel))
            chat.send_signal(signal.SIGKILL)
            chat.communicate(timeout=HANG)
    else:
        chat = _chat(root, later, "mention the rollout", HZ_CRASH_AT="after:turn.started")
        chat.communicate(timeout=HANG)
        assert chat.returncode == 137
    [rid] = Inbox(Home(root / "home"), heinzel).pending("chat")
    for _ in range(2):
        tick(root, HZ_NOW=_at(FRIDAY, minutes=5))
    assert chat_claims(root, heinzel) == {rid.request_id: 1}
    ended = [
        e.data["disposition"]
        for e in read_events(Home(root / "home").spine_path(heinzel))
        if e.kind == "turn.finished"
    ]
    assert len(ended) == 2  # the slot's turn and the chat's
    assert Inbox(Home(root / "home"), heinzel).pending() == []
    assert Inbox.marked(Home(root / "home")) == {}
    resend = ("heinzel", "chat", "report-0", "mention the rollout", "--request-id")
    again = hz(root, *resend, rid.request_id)
    assert again.returncode == 0, again.stderr
    assert "already delivered" in again.stdout  # resent: nothing runs again
    assert chat_claims(root, heinzel) == {rid.request_id: 1}


@pytest.mark.kill
def test_a_chat_killed_between_its_request_and_its_mark_is_delivered_once(
    tmp_path: Path,
) -> None:
    """Killed right after its request file, before the tick's mark (``at:inboxed``): the
    tick's housekeeping marks the request again, and the next tick runs it, once."""
    root, (heinzel,) = make_home(tmp_path, 1)
    assert tick(root)["woken"]  # the due slot drafted first: the chat is alone after
    killed = hz(
        root, "heinzel", "chat", "report-0", "mention the rollout", HZ_CRASH_AT="at:inboxed"
    )
    assert killed.returncode == 137, killed.stderr
    home = Home(root / "home")
    [request] = Inbox(home, heinzel).pending("chat")
    assert Inbox.marked(home) == {}  # nothing for the tick to find by its mark
    quiet = _at(FRIDAY, minutes=5)
    woken = [tick(root, HZ_NOW=quiet)["woken"] for _ in range(3)]
    assert [len(w) for w in woken] == [0, 1, 0]  # marked again, run, then nothing
    assert chat_claims(root, heinzel) == {request.request_id: 1}
    body = (home.turns_dir(heinzel) / f"{woken[1][0]['ended'][0]['turn']}.jsonl").read_text()
    assert "mention the rollout" in body
    assert Inbox(home, heinzel).pending() == []
    assert Inbox.marked(home) == {}


@pytest.mark.kill
def test_a_chat_that_would_answer_while_a_tick_holds_the_lock_is_delivered_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A question waits; a tick at the next slot holds the lock; a chat with its request id
    comes (it would answer the question) and waits for the lock. The tick's turn takes the
    chat from the inbox first, so the chat is not the answer after all: it says which turn
    it went into, the question still waits, and the request id has one claim (the chaos
    model's `page_together` found it answering the question too: delivered twice)."""
    from tests.tick.chaos_world import Loopback, Spines

    root, (heinzel,) = make_home(tmp_path, 1)
    provider = Loopback()
    try:
        provider.asks = 1
        (root / "loop.toml").write_text(
            '[heinzel]\nmodel = "openai-chat:gpt-4o-mini"\nlock_timeout = "60s"\n',
            encoding="utf-8",
        )
        monkeypatch.setenv("HZ_CONFIG", "loop.toml")
        monkeypatch.setenv("HZ_BASE_URL", provider.base_url("t"))
        monkeypatch.setenv("OPENAI_API_KEY", "sk-race")
        asked = hz(root, "heinzel", "wake", "report-0", HZ_NOW=_at(FRIDAY, days=-1))
        assert "asks:" in asked.stdout, asked.stdout + asked.stderr
        paused = PausedTick(root, tmp_path / "sync", FRIDAY, "start")
        paused.ready()
        chat = forkhz.Popen(
            [
                HZ,
                "heinzel",
                "chat",
                "report-0",
                "only incidents",
                "--request-id",
                "rq-race1",
                "--json",
            ],
            cwd=root,
            env=env(root, _at(FRIDAY, seconds=1.5)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        _waiting_for_lock(chat, _lock(root, heinzel))
        [turn] = _tick_turns(paused.go())
        answer = _answer(chat)
    finally:
        provider.close()
    facts = Spines.read(root / "home")
    assert facts.runs[f"{heinzel}@rq-race1"] == 1, facts.runs
    assert answer["delivered"].startswith(f"delivered into turn {turn} "), answer
    assert facts.answers == {}, facts.answers  # the question still waits for its answer


@pytest.mark.kill
def test_one_chat_sent_twice_at_once_while_a_question_waits_is_delivered_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A question waits; the same chat (one request id) is sent twice at once, and both
    sends wait for the lock the test holds. The first to get it answers the question; the
    second says it was already delivered as that answer and runs no turn of its own (the
    chaos model's MCP rule found it running as a chat turn too: delivered twice)."""
    from tests.tick.chaos_world import Loopback, Spines

    root, (heinzel,) = make_home(tmp_path, 1)
    provider = Loopback()
    try:
        provider.asks = 1
        (root / "loop.toml").write_text(
            '[heinzel]\nmodel = "openai-chat:gpt-4o-mini"\nlock_timeout = "60s"\n',
            encoding="utf-8",
        )
        monkeypatch.setenv("HZ_CONFIG", "loop.toml")
        monkeypatch.setenv("HZ_BASE_URL", provider.base_url("t"))
        monkeypatch.setenv("OPENAI_API_KEY", "sk-race")
        asked = hz(root, "heinzel", "wake", "report-0")
        assert "asks:" in asked.stdout, asked.stdout + asked.stderr
        args = [HZ, "heinzel", "chat", "report-0", "only incidents", "--request-id", "rq-twice"]
        with holding(_lock(root, heinzel)):
            chats = [
                forkhz.Popen(
                    [*args, "--json"],
                    cwd=root,
                    env=env(root, _at(FRIDAY, seconds=1.5)),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                for _ in range(2)
            ]
            for chat in chats:
                _waiting_for_lock(chat, _lock(root, heinzel))
        answers = sorted((_answer(chat)["delivered"] for chat in chats), key=len)
    finally:
        provider.close()
    facts = Spines.read(root / "home")
    assert facts.runs[f"{heinzel}@rq-twice"] == 1, facts.runs
    assert answers[0] == "answers the open question", answers
    assert answers[1].startswith("already delivered: answers the question of turn "), answers
