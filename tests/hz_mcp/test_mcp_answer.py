"""``heinzel_answer`` over MCP against a real proposed write: a chat turn (the real
``hz heinzel chat``) whose scripted model proposes ``pause``, answered from the SDK client."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from tests import forkhz, inprocess

from .client import HZ, priya, session, text

_path = Path(__file__).resolve().parents[1] / "web" / "scripted.py"
_spec = importlib.util.spec_from_file_location("hz_web_scripted", _path)
assert _spec is not None and _spec.loader is not None
scripted = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(scripted)


def _hz(env: dict[str, str], cwd: Path, *args: str) -> str:
    done = forkhz.run([HZ, *args], env=env, cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, (args, done.stderr)
    return done.stdout


def _here(env: dict[str, str], cwd: Path, *args: str) -> str:
    """Set-up, and what `show` reads back from the index: in this process
    (tests/inprocess.py); the chat and `hz mcp` under test are real processes."""
    done = inprocess.hz(list(args), env, cwd)
    assert done.returncode == 0, (args, done.stderr)
    return done.stdout


@pytest.mark.parametrize(("approve", "state"), [(True, "paused"), (False, "asleep")])
def test_heinzel_answer_approves_or_denies_a_proposed_write(
    tmp_path: Path, approve: bool, state: str
) -> None:
    """A write the model proposed in a chat turn waits; heinzel_answer approves (it pauses,
    once) or denies it (it stays asleep), and the turn ends with the question answered."""
    model = scripted.PausingModel()
    model.gate.set()
    try:
        env = model.env(priya(tmp_path))
        _here(env, tmp_path, "heinzel", "new", "--from", "weekly-report.prose.md")
        _here(env, tmp_path, "approve", "weekly-report")
        _hz(env, tmp_path, "heinzel", "chat", "weekly-report", "pause it please")
        assert '"kind": "proposal"' in _here(
            env, tmp_path, "heinzel", "show", "weekly-report", "--json"
        )

        async def body(s: ClientSession) -> tuple[Any, Any, Any]:
            shown = await s.call_tool("heinzel_show", {"name": "weekly-report"})
            answered = await s.call_tool(
                "heinzel_answer", {"name": "weekly-report", "approve": approve}
            )
            again = await s.call_tool(
                "heinzel_answer", {"name": "weekly-report", "approve": approve}
            )
            return shown, answered, again

        shown, answered, again = session(env, tmp_path, body)
    finally:
        model.close()
    assert shown.structured_content["pending"]["kind"] == "question"
    assert not answered.is_error, text(answered)
    after = _here(env, tmp_path, "heinzel", "show", "weekly-report", "--json")
    assert f'"state": "{state}"' in after and '"kind": "proposal"' not in after
    assert again.is_error and "HZH210" in text(again)


QUESTION = "Which incidents belong in it?"
ANSWER = "only the platform team's incidents"


def _asks(body: dict[str, Any], n: int) -> Any:
    """Ask until a request carries the answer, then nothing to do."""
    import json

    if ANSWER in json.dumps(body):
        return scripted.fake.Outcome({"report": "noted", "nothing_to_do": True, "reason": "ok"})
    return scripted.fake.Outcome({"report": "one thing is unclear", "question": QUESTION})


def test_a_question_shows_in_heinzel_show_and_heinzel_answer_answers_it_in_words(
    tmp_path: Path,
) -> None:
    """The model's question is in heinzel_show's `questions` as its words; heinzel_answer
    with `text` and that question's turn answers it; with neither approve nor text it is a
    coded tool error (HZH351)."""
    provider = scripted.fake.Provider("openai", _asks)
    try:
        env = {
            **priya(tmp_path),
            "HZ_MODEL": scripted.MODEL,
            "HZ_MODEL_FAST": scripted.MODEL,
            "HZ_MODEL_BEST": scripted.MODEL,
            "HZ_BASE_URL": provider.base_url,
            "OPENAI_API_KEY": "sk-test",
        }
        _here(env, tmp_path, "heinzel", "new", "--from", "weekly-report.prose.md")
        _here(env, tmp_path, "approve", "weekly-report")

        async def body(s: ClientSession) -> tuple[Any, Any, Any, Any]:
            woke = await s.call_tool("heinzel_wake", {"name": "weekly-report"})
            shown = await s.call_tool("heinzel_show", {"name": "weekly-report"})
            turn = shown.structured_content["questions"][0]["turn"]
            neither = await s.call_tool("heinzel_answer", {"name": "weekly-report"})
            answered = await s.call_tool(
                "heinzel_answer", {"name": "weekly-report", "text": ANSWER, "question": turn}
            )
            return woke, shown, neither, answered

        woke, shown, neither, answered = session(env, tmp_path, body)
    finally:
        provider.close()
    assert [q["text"] for q in woke.structured_content["questions"]] == [QUESTION]
    [question] = shown.structured_content["questions"]
    assert question["kind"] == "question" and question["text"] == QUESTION
    assert neither.is_error and "HZH351" in text(neither)
    assert not answered.is_error, text(answered)
    assert "questions" not in answered.structured_content
    after = _here(env, tmp_path, "heinzel", "show", "weekly-report", "--json")
    assert QUESTION not in after
