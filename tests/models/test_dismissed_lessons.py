"""Dismissed means gone: a lesson dismissed (`hz heinzel dismiss`) or forgotten (`hz heinzel
forget` of its ``lesson.recorded`` line) never reaches the model again, neither in the
instructions nor through the turn that learned it, kept verbatim in the next turns' context
(its outcome quotes the lesson). Real `hz` against the loopback provider: what the provider
received is what the model read."""

from __future__ import annotations

import json
from typing import Any

from ledger.spine import read_events

from .conftest import CONTRACT, DRAFT, User, answered_a_tool
from .fake_providers import Call, Outcome

WORDS = "Always open with the PURPLE-OTTER summary"
"""The lesson the first turn learns (words found nowhere else)."""
LEARNED = {"report": "learned from the user", "lessons": [{"sentence": WORDS}]}


def _learned(user: User) -> int:
    """notes-digest approved (set-up, in this process), one wake whose outcome records the
    lesson; its seq."""
    path = user.folder / "notes-digest.prose.md"
    path.write_text(CONTRACT, encoding="utf-8")
    for args in (("heinzel", "new", "--from", str(path)), ("approve", "notes-digest")):
        done = user.in_process(*args)
        assert done.returncode == 0, done.stderr
    user.serve(lambda body, n: Outcome(LEARNED) if n == 1 else Outcome(DRAFT))
    woke = user.hz("heinzel", "wake", "notes-digest", "--json")
    assert woke.returncode == 0, woke.stderr
    assert json.loads(woke.stdout)["disposition"] == "learned", woke.stdout
    [spine] = (user.home / "heinzel").glob("hz-*/session.jsonl")
    [lesson] = [e for e in read_events(spine) if e.kind == "lesson.recorded"]
    return lesson.seq


def _sent(user: User) -> str:
    """Everything the last model request sent: instructions, messages, tools."""
    assert user.provider is not None
    return json.dumps(user.provider.seen[-1].body, ensure_ascii=False)


def _wake(user: User) -> dict[str, Any]:
    woke = user.hz("heinzel", "wake", "notes-digest", "--json")
    assert woke.returncode == 0, woke.stderr
    return dict(json.loads(woke.stdout))


def test_a_learned_lesson_reaches_the_next_turn(user: User) -> None:
    """The set-up's premise: without a dismissal the next turn reads the lesson, in its
    instructions and in the learning turn's body."""
    _learned(user)
    _wake(user)
    sent = _sent(user)
    assert sent.count("PURPLE-OTTER") >= 2, sent


def test_a_dismissed_lesson_reaches_no_later_turn(user: User) -> None:
    """`hz heinzel dismiss` of the lesson: the next turn's request carries its words
    nowhere (not in the instructions, not in the learning turn's verbatim body)."""
    seq = _learned(user)
    dismissed = user.hz("heinzel", "dismiss", "notes-digest", str(seq))
    assert dismissed.returncode == 0, dismissed.stderr
    assert _wake(user)["disposition"] == "drafted"
    sent = _sent(user)
    assert "PURPLE-OTTER" not in sent, sent
    assert "a dismissed lesson" in sent


def test_a_forgotten_lesson_line_is_replaced_everywhere(user: User) -> None:
    """`hz heinzel forget` of the lesson's line with ``--instead``: the model reads the
    replacement where the lesson's words were, in the instructions, the body and what its
    ``lessons`` tool returns."""
    seq = _learned(user)
    forgot = user.hz(
        "heinzel", "forget", "notes-digest", str(seq), "--instead", "keep it to GREEN-FOX lines"
    )
    assert forgot.returncode == 0, forgot.stderr
    assert user.provider is not None
    user.provider.script = lambda body, n: (
        Outcome(DRAFT) if answered_a_tool(body) else Call("lessons", {})
    )
    assert _wake(user)["disposition"] == "drafted"
    sent = _sent(user)  # the second request: it carries the tool's answer
    assert "PURPLE-OTTER" not in sent, sent
    assert sent.count("GREEN-FOX") >= 3, sent
