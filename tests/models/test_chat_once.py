"""One delivery per request id, whatever it becomes (issue 38, item 1): a chat's request id
is claimed once (a steer, its own turn, a question's answer, a queued follow-up), and every
later send of it says "already delivered", exits 0 and runs nothing; a chat that cannot
take the lock keeps nothing of an answer; `hz heinzel retry --request-id R` runs once per R.

Real `hz` processes (forked, tests/forkhz.py) against a fake provider that asks a question
until a request carries the user's answer, then drafts.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from typing import Any

import pytest
from mcp import ClientSession

from ledger.spine import read_events
from machines.stores.journal import wake_keys
from tests import forkhz
from tests.hz_mcp.client import session
from tests.locks import holding
from tests.waits import HANG

from .conftest import CREATED, DRAFT, User
from .fake_providers import Hang, Outcome

pytestmark = pytest.mark.parametrize("user", ["anthropic"], indirect=True)

ANSWER = "only the platform team's incidents"
ASK = {"report": "one thing is unclear", "question": "Which incidents belong in it?"}


def _ask_then_draft(body: dict[str, Any], n: int) -> Outcome:
    """Ask until a request carries the user's answer, then draft."""
    return Outcome(DRAFT if ANSWER in json.dumps(body) else ASK)


def _approved(user: User) -> str:
    """notes-digest created and approved; its id."""
    user.serve(lambda body, n: Outcome(CREATED))
    assert user.in_process("heinzel", "new", "summarise notes.txt into report.md").returncode == 0
    assert user.in_process("approve", "notes-digest").returncode == 0
    [spine] = (user.home / "heinzel").glob("hz-*/session.jsonl")
    return spine.parent.name


def _events(user: User, kind: str | None = None) -> list[Any]:
    [spine] = (user.home / "heinzel").glob("hz-*/session.jsonl")
    return [e for e in read_events(spine) if kind is None or e.kind == kind]


def _claims(user: User, heinzel: str, *rids: str) -> dict[str, int]:
    """Per chat request id of ``rids``, where it was delivered: each steer, each turn keyed
    ``<id>@<request id>`` and each question answered with it (exactly one each)."""
    found: Counter[str] = Counter()
    for event in _events(user):
        if event.kind == "turn.steered":
            found[str(event.data.get("request_id"))] += 1
        elif event.kind == "question.answered" and event.data.get("request"):
            found[str(event.data["request"])] += 1
        elif event.kind in ("turn.started", "turn.skipped"):
            for key in wake_keys(event.data, event.key):
                owner, _, rid = key.partition("@")
                if owner == heinzel and rid.startswith("rq-"):
                    found[rid] += 1
    return {rid: found[rid] for rid in rids}


def _chat(user: User, text: str, rid: str, **extra: str) -> dict[str, Any]:
    done = user.hz("heinzel", "chat", "notes-digest", text, "--request-id", rid, "--json", **extra)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    said: dict[str, Any] = json.loads(done.stdout)
    return said


def test_an_answering_chat_resent_runs_nothing(user: User) -> None:
    """A chat that answered the open question, resent with its request id (by `hz` and
    again with --json): "already delivered: answers the question of turn ...", exit 0, no
    model request, no turn; `question.answered` names the request."""
    heinzel = _approved(user)
    provider = user.serve(_ask_then_draft)
    assert json.loads(user.hz("heinzel", "wake", "notes-digest", "--json").stdout)["state"] == (
        "waiting"
    )
    said = _chat(user, ANSWER, "rq-answer1")
    assert said["delivered"] == "answers the open question"
    [answered] = _events(user, "question.answered")
    asked, started = len(provider.seen), len(_events(user, "turn.started"))
    again = user.hz("heinzel", "chat", "notes-digest", ANSWER, "--request-id", "rq-answer1")
    assert again.returncode == 0, again.stderr
    assert (
        f"delivered: already delivered: answers the question of turn {answered.turn}"
        in again.stdout.splitlines()
    )
    assert _chat(user, ANSWER, "rq-answer1")["turn"] == answered.turn

    async def resend(s: ClientSession) -> Any:  # an agent's MCP heinzel_chat, the same id
        arguments = {"name": "notes-digest", "text": ANSWER, "request_id": "rq-answer1"}
        return await s.call_tool("heinzel_chat", arguments)

    mcp = session(user.env, user.folder, resend)
    assert not mcp.is_error, mcp
    assert mcp.structured_content["delivered"].startswith("already delivered: answers the")
    assert len(provider.seen) == asked
    assert len(_events(user, "turn.started")) == started
    assert answered.data["request"] == "rq-answer1"
    assert _claims(user, heinzel, "rq-answer1") == {"rq-answer1": 1}


def test_a_chat_delivered_as_a_turn_resent_while_a_question_waits_is_no_answer(
    user: User,
) -> None:
    """The chat ran as a turn of its own, which asked a question; resent while that question
    waits, it says where it went (its turn, waiting), exit 0, and is not the answer: no
    `question.answered`, no model request; the real answer then is."""
    heinzel = _approved(user)
    provider = user.serve(_ask_then_draft)
    first = _chat(user, "what changed this week?", "rq-first1")
    assert first["delivered"] == "a new turn" and first["state"] == "waiting", first
    asked = len(provider.seen)
    again = _chat(user, "what changed this week?", "rq-first1")
    assert again["delivered"] == "already delivered (its turn waits; nothing ran again)"
    assert again["turn"] == first["turn"]
    assert _events(user, "question.answered") == []
    assert len(provider.seen) == asked
    answer = _chat(user, ANSWER, "rq-answer2")
    assert answer["delivered"] == "answers the open question"
    [answered] = _events(user, "question.answered")
    assert (answered.turn, answered.data["request"]) == (first["turn"], "rq-answer2")
    assert _claims(user, heinzel, "rq-first1", "rq-answer2") == {"rq-first1": 1, "rq-answer2": 1}


def test_an_answer_that_cannot_take_the_lock_keeps_nothing_of_the_answer(user: User) -> None:
    """A chat answering while another process holds the spine's lock past lock_timeout:
    exit 0, queued (never HZL010), and no answer file left; the next chat is the answer in
    its own words; the tick delivers the first chat once, as a chat of its own."""
    heinzel = _approved(user)
    provider = user.serve(_ask_then_draft)
    assert user.hz("heinzel", "wake", "notes-digest").returncode == 0
    (user.folder / "quick.toml").write_text('[heinzel]\nlock_timeout = "1s"\n', encoding="utf-8")
    session = user.home / "heinzel" / heinzel
    with holding(session / "lock"):
        said = _chat(user, "the first words", "rq-locked1", HZ_CONFIG="quick.toml")
    assert said["delivered"].startswith("queued: another process held the lock"), said
    assert "HZL010" not in json.dumps(said)
    assert list((session / "inbox").glob("answer-*.json")) == []
    assert _events(user, "question.answered") == []
    second = _chat(user, ANSWER, "rq-second1")
    assert second["delivered"] == "answers the open question"
    [answered] = _events(user, "question.answered")
    assert answered.data["request"] == "rq-second1"
    assert ANSWER in json.dumps(provider.seen[-1].body)
    both = ("rq-locked1", "rq-second1")
    ticked = user.hz("system", "daemon", "tick", "--json")
    assert ticked.returncode == 0, ticked.stderr
    assert any("the first words" in json.dumps(s.body) for s in provider.seen)
    assert _claims(user, heinzel, *both) == dict.fromkeys(both, 1)
    assert user.hz("system", "daemon", "tick", "--json").returncode == 0
    assert _claims(user, heinzel, *both) == dict.fromkeys(both, 1)


def test_a_retry_resent_three_times_runs_once(user: User) -> None:
    """`hz heinzel retry --request-id R` sent three times (and once more over MCP): one
    retry turn keyed ``<id>@retry:R``, paid once; the resends say "already delivered",
    exit 0, run nothing."""
    heinzel = _approved(user)
    provider = user.serve(lambda body, n: Outcome(DRAFT))
    assert user.hz("heinzel", "wake", "notes-digest").returncode == 0
    sent = []
    for _ in range(3):
        done = user.hz(
            "heinzel", "retry", "notes-digest", "shorter", "--request-id", "rq-retry1", "--json"
        )
        assert done.returncode == 0, done.stderr
        sent.append((json.loads(done.stdout), len(provider.seen)))
    first, *resent = sent
    assert first[0]["disposition"] == "drafted"
    for said, asked in resent:
        assert said["delivered"] == "already delivered (its turn ran then; nothing ran again)"
        assert said["turn"] == first[0]["turn"]
        assert asked == first[1]

    async def resend(s: ClientSession) -> Any:  # an agent's MCP heinzel_retry, the same id
        arguments = {"name": "notes-digest", "hint": "shorter", "request_id": "rq-retry1"}
        return await s.call_tool("heinzel_retry", arguments)

    mcp = session(user.env, user.folder, resend)
    assert not mcp.is_error, mcp
    assert mcp.structured_content["delivered"].startswith("already delivered")
    assert len(provider.seen) == first[1]
    retries = [e for e in _events(user, "turn.started") if e.data.get("cause") == "retry"]
    assert [e.turn for e in retries] == [first[0]["turn"]]
    assert first[0]["key"] == f"{heinzel}@retry:rq-retry1"


def _hang_first(body: dict[str, Any], n: int) -> Hang | Outcome:
    """The first request is held (until a stop cancels it); every later one drafts."""
    return Hang() if n == 1 else Outcome(DRAFT)


def test_a_wake_whose_turn_was_stopped_exits_1_though_a_follow_up_ran(user: User) -> None:
    """`hz heinzel wake` while a chat waits for its turn and `hz heinzel stop` ends it: the
    chat's follow-up turn runs after it, but the wake says how its own turn ended,
    abandoned (stopped), and exits 1 with HZH361."""
    _approved(user)
    provider = user.serve(_hang_first)
    woke = forkhz.Popen(
        [sys.executable, "-m", "heinzel", "heinzel", "wake", "notes-digest", "--json"],
        cwd=user.folder,
        env=user.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert provider.received.wait(timeout=HANG), "the request never reached the provider"
        queued = _chat(user, "mention the rollout", "rq-during1")
        assert queued["delivered"] == "queued for the running turn", queued
        stop = user.hz("heinzel", "stop", "notes-digest")
        assert stop.returncode == 0, stop.stderr
        out, err = woke.communicate(timeout=HANG)
    finally:
        woke.kill()
    assert woke.returncode == 1, (out, err)
    assert "HZH361" in err, err
    ended = json.loads(out)
    assert (ended["state"], ended["reason"]) == ("abandoned", "stopped"), ended
    finished = [e.data for e in _events(user, "turn.finished")]
    assert [f["disposition"] for f in finished[-2:]] == ["abandoned", "drafted"], finished


def test_a_second_wake_names_the_older_question_as_the_older_turns(user: User) -> None:
    """The first wake's turn asks a question; a second wake's turn drafts: its output names
    the question still waiting as the first turn's, never as a question of its own."""
    _approved(user)
    user.serve(lambda body, n: Outcome(ASK if n == 1 else DRAFT))
    first = user.hz("heinzel", "wake", "notes-digest", "--json")
    asked = json.loads(first.stdout)
    assert asked["state"] == "waiting", first.stdout
    own = user.hz("heinzel", "wake", "notes-digest", "--json")
    assert own.returncode == 0, own.stderr
    [listed] = json.loads(own.stdout)["questions"]
    assert listed["turn"] == asked["turn"]
    second = user.hz("heinzel", "wake", "notes-digest")
    assert second.returncode == 0, second.stderr
    lines = second.stdout.splitlines()
    assert f"earlier question of turn {asked['turn']}: asks: {ASK['question']}" in lines, lines
    assert not any(line.startswith("question:") for line in lines), lines


def test_an_answer_resent_with_its_id_answers_no_other_question(user: User) -> None:
    """`hz heinzel answer NAME TEXT --request-id R` answers the open question; a later turn
    asks another; the same answer resent (and over MCP heinzel_answer) says which question
    it answered, exits 0, and leaves the new question waiting: no second answer, no model
    request."""
    heinzel = _approved(user)
    provider = user.serve(lambda body, n: Outcome(DRAFT if n == 2 else ASK))
    first = json.loads(user.hz("heinzel", "wake", "notes-digest", "--json").stdout)
    assert first["state"] == "waiting", first
    answer = ("heinzel", "answer", "notes-digest", ANSWER, "--request-id", "rq-ans1")
    done = user.hz(*answer, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["disposition"] == "drafted"
    second = json.loads(user.hz("heinzel", "wake", "notes-digest", "--json").stdout)
    assert second["state"] == "waiting", second
    asked = len(provider.seen)
    again = user.hz(*answer)
    assert again.returncode == 0, again.stderr
    assert (
        f"notes-digest: already delivered: answers the question of turn {first['turn']} "
        f"(turn {first['turn']})"
    ) in again.stdout.splitlines(), again.stdout

    async def resend(s: ClientSession) -> Any:  # an agent's MCP heinzel_answer, the same id
        arguments = {"name": "notes-digest", "text": ANSWER, "request_id": "rq-ans1"}
        return await s.call_tool("heinzel_answer", arguments)

    mcp = session(user.env, user.folder, resend)
    assert not mcp.is_error, mcp
    assert mcp.structured_content["turn"] == first["turn"]
    [answered] = _events(user, "question.answered")
    assert (answered.turn, answered.data["request"]) == (first["turn"], "rq-ans1")
    assert len(provider.seen) == asked
    assert _claims(user, heinzel, "rq-ans1") == {"rq-ans1": 1}


def test_a_wake_resent_with_its_id_runs_once(user: User) -> None:
    """`hz heinzel wake NAME --request-id R` twice (and over MCP heinzel_wake): one turn
    keyed ``<id>@R``; the resends say "already delivered", exit 0, run nothing."""
    heinzel = _approved(user)
    provider = user.serve(lambda body, n: Outcome(DRAFT))
    wake = ("heinzel", "wake", "notes-digest", "--request-id", "rq-wake1", "--json")
    first = user.hz(*wake)
    assert first.returncode == 0, first.stderr
    ran = json.loads(first.stdout)
    assert ran["disposition"] == "drafted", ran
    asked = len(provider.seen)
    again = user.hz(*wake)
    assert again.returncode == 0, again.stderr
    said = json.loads(again.stdout)
    assert said["delivered"] == "already delivered (its turn ran then; nothing ran again)"
    assert said["turn"] == ran["turn"]

    async def resend(s: ClientSession) -> Any:  # an agent's MCP heinzel_wake, the same id
        return await s.call_tool("heinzel_wake", {"name": "notes-digest", "request_id": "rq-wake1"})

    mcp = session(user.env, user.folder, resend)
    assert not mcp.is_error, mcp
    assert mcp.structured_content["turn"] == ran["turn"]
    assert len(provider.seen) == asked
    assert _claims(user, heinzel, "rq-wake1") == {"rq-wake1": 1}


def test_a_wake_or_retry_resent_after_its_process_was_killed_resumes_its_turn(
    user: User,
) -> None:
    """`hz heinzel wake --request-id W` killed after its model request, then W over MCP
    heinzel_wake; `hz heinzel retry --request-id R` killed so, then R by the command: each
    resend resumes the turn its killed process left open (as a resent chat does), once:
    "already delivered (its turn resumed now)", the turn drafted, no second turn; a third
    send runs nothing."""
    heinzel = _approved(user)
    provider = user.serve(lambda body, n: Outcome(DRAFT))
    wake = ("heinzel", "wake", "notes-digest", "--request-id", "rq-wake2", "--json")
    killed = user.hz(*wake, HZ_CRASH_AT="after:model.request")
    assert killed.returncode == 137, killed.stderr
    asked = len(provider.seen)

    async def resend(s: ClientSession) -> Any:  # an agent's MCP heinzel_wake, the same id
        return await s.call_tool("heinzel_wake", {"name": "notes-digest", "request_id": "rq-wake2"})

    mcp = session(user.env, user.folder, resend)
    assert not mcp.is_error, mcp
    said = mcp.structured_content
    assert said["delivered"] == "already delivered (its turn resumed now)", said
    assert said["state"] == "finished" and said["disposition"] == "drafted", said
    asked = len(provider.seen)  # the outcome recorded before the kill is not asked again
    again = user.hz(*wake)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["turn"] == said["turn"]
    assert json.loads(again.stdout)["delivered"].startswith("already delivered (its turn ran")
    assert len(provider.seen) == asked
    assert _claims(user, heinzel, "rq-wake2") == {"rq-wake2": 1}

    retry = ("heinzel", "retry", "notes-digest", "shorter", "--request-id", "rq-retry2", "--json")
    killed = user.hz(*retry, HZ_CRASH_AT="after:model.request")
    assert killed.returncode == 137, killed.stderr
    asked = len(provider.seen)
    resumed = user.hz(*retry)
    assert resumed.returncode == 0, resumed.stderr
    done = json.loads(resumed.stdout)
    assert done["delivered"] == "already delivered (its turn resumed now)", done
    assert done["state"] == "finished" and done["disposition"] == "drafted", done
    asked = len(provider.seen)
    assert user.hz(*retry).returncode == 0 and len(provider.seen) == asked
    retries = [e for e in _events(user, "turn.started") if e.data.get("cause") == "retry"]
    assert [e.turn for e in retries] == [done["turn"]]


def test_an_answer_command_that_cannot_take_the_lock_keeps_nothing(user: User) -> None:
    """`hz heinzel answer` while another process holds the lock past lock_timeout: HZL010,
    exit 1, and nothing of the answer kept (no answer file), so the next answer's words are
    the ones recorded."""
    heinzel = _approved(user)
    provider = user.serve(_ask_then_draft)
    assert user.hz("heinzel", "wake", "notes-digest").returncode == 0
    (user.folder / "quick.toml").write_text('[heinzel]\nlock_timeout = "1s"\n', encoding="utf-8")
    session_dir = user.home / "heinzel" / heinzel
    with holding(session_dir / "lock"):
        refused = user.hz("heinzel", "answer", "notes-digest", "words lost", HZ_CONFIG="quick.toml")
    assert refused.returncode == 1 and refused.stderr.startswith("HZL010"), refused.stderr
    assert list((session_dir / "inbox").glob("answer-*.json")) == []
    done = user.hz("heinzel", "answer", "notes-digest", ANSWER, "--json")
    assert done.returncode == 0, done.stderr
    assert ANSWER in json.dumps(provider.seen[-1].body)
    assert "words lost" not in json.dumps(provider.seen[-1].body)
