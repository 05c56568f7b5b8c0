"""Chat through the `hz` executable against the real provider clients (issue 12, items 4
and 5): an amendment the model files for the user's chat message is the user's, one it
proposes on its own may not widen (HZC050); a chat while a question is open answers it."""

from __future__ import annotations

import json
from typing import Any

from ledger.spine import read_events

from .conftest import CONTRACT, CREATED, DRAFT, User, answered_a_tool
from .fake_providers import Outcome

WIDER = CONTRACT.replace(
    "    notes: {from: files.read, args: {path: notes.txt}}\n",
    "    notes: {from: files.read, args: {path: notes.txt}}\n"
    "    todo: {from: files.read, args: {path: todo.txt}}\n",
)
ASKED = {"own idea": None, "cite the notes": "notes", "please add todo.txt": "message"}


def _amend(body: dict[str, Any], n: int) -> Outcome:
    """An amendment adding ``todo``, citing what the chat message says to cite."""
    said = json.dumps(body)
    cited = next(cite for words, cite in ASKED.items() if words in said)
    amendment = {"text": WIDER, "why": "todo.txt belongs in the digest"}
    return Outcome({"report": "proposed todo", "amendment": {**amendment, "asked_in": cited}})


def _events(user: User, kind: str) -> list[Any]:
    [spine] = (user.home / "heinzel").glob("hz-*/session.jsonl")
    return [e for e in read_events(spine) if e.kind == kind]


def test_only_an_amendment_citing_the_users_message_may_widen(user: User) -> None:
    """A widening the model proposes on its own, or citing an input that is no message of
    the user's, is refused (HZC050) and nothing waits; citing the chat message files it
    as the user's, and `hz approve` makes it v2."""
    user.serve(lambda body, n: Outcome(CREATED))
    assert user.in_process("heinzel", "new", "summarise notes.txt into report.md").returncode == 0
    assert user.in_process("approve", "notes-digest").returncode == 0
    user.serve(_amend)
    for message in ("own idea", "cite the notes"):
        done = user.hz("heinzel", "chat", "notes-digest", message)
        assert done.returncode == 0, done.stderr
        assert "amendment:" not in done.stdout
    assert [e.data["code"] for e in _events(user, "amendment.refused")] == ["HZC050", "HZC050"]
    assert _events(user, "amendment.proposed") == []
    done = user.hz("heinzel", "chat", "notes-digest", "please add todo.txt")
    assert done.returncode == 0, done.stderr
    assert "(your request): hz approve notes-digest" in done.stdout
    [proposed] = _events(user, "amendment.proposed")
    turn = _events(user, "turn.started")[-1]  # the third chat's
    assert proposed.data["by"] == "user"
    assert proposed.data["requested_in"] == str(turn.key).split("@", 1)[1]
    approved = user.hz("approve", "notes-digest")
    assert approved.returncode == 0 and "notes-digest v2" in approved.stdout


ANSWER = "only the platform team's incidents"
ASK = {"report": "one thing is unclear", "question": "Which incidents belong in it?"}


def _ask_then_draft(body: dict[str, Any], n: int) -> Outcome:
    """Ask until a request carries the user's answer, then draft."""
    return Outcome(DRAFT if ANSWER in json.dumps(body) else ASK)


def test_a_chat_while_a_question_is_open_answers_it_once(user: User) -> None:
    """The chat is the answer: ``question.answered`` once, the waiting turn ends, exactly
    one follow-up drafts with it (no second turn for the same message); the next chat is an
    ordinary one (a new asked turn)."""
    user.serve(lambda body, n: Outcome(CREATED))
    assert user.in_process("heinzel", "new", "summarise notes.txt into report.md").returncode == 0
    assert user.in_process("approve", "notes-digest").returncode == 0
    provider = user.serve(_ask_then_draft)
    asked = user.hz("heinzel", "wake", "notes-digest", "--json")
    assert json.loads(asked.stdout)["state"] == "waiting", asked.stdout
    done = user.hz("heinzel", "chat", "notes-digest", ANSWER, "--json")
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)
    assert said["delivered"] == "answers the open question"
    assert said["question"] == ASK["question"] and said["disposition"] == "drafted"
    assert ANSWER in json.dumps(provider.seen[-1].body)
    [answered] = _events(user, "question.answered")
    assert set(answered.data) == {"id", "hash", "request"}  # the chat that answered it
    after = [e.key for e in _events(user, "turn.started") if e.seq > answered.seq]
    assert [str(k).split("@", 1)[1] for k in after] == [f"answer:{answered.turn}"]
    again = user.hz("heinzel", "chat", "notes-digest", "thanks, keep it short", "--json")
    assert again.returncode == 0, again.stderr
    chatted = json.loads(again.stdout)
    assert chatted["delivered"] == "a new turn"
    assert chatted["key"] in [e.key for e in _events(user, "turn.started")]
    assert len(_events(user, "question.answered")) == 1
    ended = [e.data["disposition"] for e in _events(user, "turn.finished")]
    assert ended[1:3] == ["asked", "drafted"], ended


def test_a_chat_answer_killed_after_it_is_recorded_is_finished_once_by_the_tick(
    user: User,
) -> None:
    """Killed right after ``question.answered`` (the chat's request not yet taken): the
    next tick runs the answer's one follow-up with the chat's words, never the chat as a
    turn of its own, and a second tick runs nothing more."""
    user.serve(lambda body, n: Outcome(CREATED))
    assert user.in_process("heinzel", "new", "summarise notes.txt into report.md").returncode == 0
    assert user.in_process("approve", "notes-digest").returncode == 0
    provider = user.serve(_ask_then_draft)
    assert user.hz("heinzel", "wake", "notes-digest").returncode == 0
    killed = user.hz(
        "heinzel", "chat", "notes-digest", ANSWER, HZ_CRASH_AT="after:question.answered"
    )
    assert killed.returncode == 137
    [answered] = _events(user, "question.answered")
    ticked = user.hz("system", "daemon", "tick", "--json")
    assert ticked.returncode == 0, ticked.stderr
    assert ANSWER in json.dumps(provider.seen[-1].body)
    after = [e for e in _events(user, "turn.started") if e.seq > answered.seq]
    started = [str(e.key).split("@", 1)[1] for e in after]
    assert started == [f"answer:{answered.turn}"]
    assert user.hz("system", "daemon", "tick", "--json").returncode == 0
    assert [e for e in _events(user, "turn.started") if e.seq > answered.seq] == after
    ended = [e.data["disposition"] for e in _events(user, "turn.finished")]
    assert ended[-2:] == ["asked", "drafted"], ended


def _reads_then_draft(body: dict[str, Any], n: int) -> Any:
    """Call hz_show on itself and on a name that does not exist, then draft."""
    from .fake_providers import Call

    if answered_a_tool(body):
        return Outcome(DRAFT)
    return [Call("hz_show", {"name": "notes-digest"}), Call("hz_show", {"name": "nobody"})]


def test_a_chat_turn_reads_hz_through_its_read_tools(user: User) -> None:
    """A chat turn is offered hz's read operations (hz_list, hz_show, hz_drafts) beside its
    contract's tools; hz_show answers from the index (its state
    and last turns), an unknown name comes back as HZH080 in the tool's result, and the turn
    drafts all the same (ADR 0050 statement 3)."""
    user.serve(lambda body, n: Outcome(CREATED))
    assert user.in_process("heinzel", "new", "summarise notes.txt into report.md").returncode == 0
    assert user.in_process("approve", "notes-digest").returncode == 0
    provider = user.serve(_reads_then_draft)
    done = user.hz("heinzel", "chat", "notes-digest", "how are you doing?")
    assert done.returncode == 0, done.stderr
    first, second = provider.seen[0].body, provider.seen[-1].body
    offered = {t.get("name") or t["function"]["name"] for t in first["tools"]}
    assert {"hz_list", "hz_show", "hz_drafts", "read_notes"} <= offered
    returned = json.dumps(second["messages"][-2:]).replace("\\", "")
    # its own row as the index has it while this turn runs: awake, the created turn, this one
    assert '"name":"notes-digest","namespace":"me","state":"awake"' in returned
    assert '"cause":"asked","disposition":null,"state":"running"' in returned
    assert '"error":"HZH080"' in returned
    [finished] = _events(user, "turn.finished")[-1:]
    assert finished.data["disposition"] == "drafted"
