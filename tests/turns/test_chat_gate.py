"""The chat turns' write gate: a proposed write asks, waits, and happens once on a yes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from heinzel.cli import group
from heinzel.errors import HeinzelError
from heinzel.service import Service
from heinzel.turns import TurnHost, Turns, default_adapters
from heinzel.turns.answer import answer
from heinzel.turns.chat import write_tools
from ledger.spine import read_events
from machines import TurnState, Wake, keys
from tests import forkhz

from .chat_turn import REASON, chat_model

hz = group()

SCRIPT = Path(__file__).parent / "chat_turn.py"


def _kinds(service: Service, heinzel_id: str, kind: str) -> list[Any]:
    return [e for e in read_events(service.home.spine_path(heinzel_id)) if e.kind == kind]


def _asked(
    make_service: Callable[..., Any], **model: Any
) -> tuple[Service, str, TurnHost, TurnState]:
    service, heinzel_id, _ = make_service()
    host = TurnHost(service, model=chat_model(**model))
    wake = Wake("asked", keys.asked(heinzel_id, "r1"))
    states = host.run_wakes(heinzel_id, [wake], adapters=default_adapters(service.settings))
    return service, heinzel_id, host, states[-1]


def _answer(host: TurnHost, heinzel_id: str, yes: bool, proposal: str | None = None) -> Any:
    adapters = default_adapters(host.service.settings)
    return answer(host, heinzel_id, yes, proposal, adapters=adapters)


class TestChatGate:
    """A turn of cause asked whose model proposes `pause`."""

    def test_the_run_pauses_with_a_question(self, make_service: Callable[..., Any]) -> None:
        """question.asked holds id, tool and hash (no arguments); the turn and the row wait."""
        service, heinzel_id, _, state = _asked(make_service)
        assert (state.state, state.wait and state.wait["on"]["kind"]) == ("waiting", "answer")
        (asked,) = _kinds(service, heinzel_id, "question.asked")
        assert sorted(asked.data) == ["hash", "proposal", "tool"]
        assert asked.key == f"{heinzel_id}@question:{state.turn}:w1"
        assert REASON not in service.home.spine_path(heinzel_id).read_text()
        row = service.queries.row(heinzel_id)
        assert row["state"] == "waiting"
        assert json.loads(row["pending"]) == {"kind": "question", "ref": asked.key}

    def test_yes_pauses_once_and_the_conversation_goes_on(
        self, make_service: Callable[..., Any]
    ) -> None:
        """The pause happens once, the model reads its result, and the turn drafts."""
        service, heinzel_id, host, _ = _asked(make_service)
        done = _answer(host, heinzel_id, True)
        assert (done["state"], done["disposition"]) == ("finished", "drafted")
        assert len(_kinds(service, heinzel_id, "heinzel.paused")) == 1
        (finished,) = _kinds(service, heinzel_id, "turn.finished")
        assert finished.data["report"] == "pause: done: notes-digest is paused"
        assert [e.data["n"] for e in _kinds(service, heinzel_id, "model.request")] == [1, 2]
        assert service.queries.row(heinzel_id)["state"] == "paused"

    def test_no_pauses_nothing_and_the_model_hears_it(
        self, make_service: Callable[..., Any]
    ) -> None:
        """A denied proposal performs nothing; the model gets the denial."""
        service, heinzel_id, host, _ = _asked(make_service)
        assert _answer(host, heinzel_id, False)["disposition"] == "drafted"
        assert _kinds(service, heinzel_id, "heinzel.paused") == []
        (finished,) = _kinds(service, heinzel_id, "turn.finished")
        assert finished.data["report"] == "pause: the user said no: pause was not done"
        inbox = service.home.inbox_dir(heinzel_id) / "answer-w1.json"
        assert json.loads(inbox.read_text())["approved"] is False

    def test_a_wait_past_its_time_is_a_denial(self, make_service: Callable[..., Any]) -> None:
        """Woken by its timer with no answer, the write is not done and the model is told."""
        service, heinzel_id, host, state = _asked(make_service)
        adapters = default_adapters(service.settings)
        ended = host.resume_turn(heinzel_id, state.turn, "timer", adapters=adapters)
        assert ended is not None and ended.disposition == "drafted"
        assert _kinds(service, heinzel_id, "heinzel.paused") == []
        (finished,) = _kinds(service, heinzel_id, "turn.finished")
        assert finished.data["report"] == "pause: no answer came in time: pause was not done"

    def test_a_turn_not_asked_has_no_write_tools(self, make_service: Callable[..., Any]) -> None:
        """A schedule turn's model sees no pause or retire; an asked turn's does."""
        service, heinzel_id, _ = make_service()
        seen: list[str] = []
        host = TurnHost(service, model=chat_model(seen))
        adapters = default_adapters(service.settings)
        host.run_wakes(
            heinzel_id, [Wake("schedule", keys.schedule(heinzel_id, "s1"))], adapters=adapters
        )
        assert seen and not any("pause" in s.split(",") or "retire" in s.split(",") for s in seen)
        host.run_wakes(heinzel_id, [Wake("asked", keys.asked(heinzel_id, "r1"))], adapters=adapters)
        assert {"pause", "retire"} <= set(seen[-1].split(","))

    def test_two_proposals_are_answered_one_by_one(self, make_service: Callable[..., Any]) -> None:
        """Two waiting proposals need --proposal (HZH211, HZH212); the turn goes on after both."""
        service, heinzel_id, host, _ = _asked(make_service, both=True)
        with pytest.raises(HeinzelError) as several:
            _answer(host, heinzel_id, True)
        with pytest.raises(HeinzelError) as unknown:
            _answer(host, heinzel_id, True, "zz")
        assert (several.value.code, unknown.value.code) == ("HZH211", "HZH212")
        assert _answer(host, heinzel_id, False, "w2")["state"] == "waiting"
        assert _answer(host, heinzel_id, True, "w1")["disposition"] == "drafted"
        assert len(_kinds(service, heinzel_id, "heinzel.paused")) == 1
        assert _kinds(service, heinzel_id, "heinzel.retired") == []

    def test_nothing_waiting_is_refused(self, make_service: Callable[..., Any]) -> None:
        """An answer with no open question is HZH210, and `hz heinzel answer` says so."""
        service, heinzel_id, _ = make_service()
        with pytest.raises(HeinzelError) as refused:
            Turns(service).answer(heinzel_id, True)
        assert refused.value.code == "HZH210"
        env = {
            "HZ_HOME": str(service.home.root),
            "HZ_NOW": "2026-10-30T14:00:00Z",
            "HZ_CONFIG": "",
            "XDG_CONFIG_HOME": str(service.home.root / "xdg"),
        }
        result = CliRunner().invoke(hz, ["heinzel", "answer", "notes-digest", "yes"], env=env)
        assert result.exit_code == 1 and "HZH210" in result.output

    def test_the_write_tool_never_runs_in_the_model(self) -> None:
        """Calling a write tool's function itself is HZH213."""
        with pytest.raises(HeinzelError) as ran:
            write_tools().tools["pause"].function("x")
        assert ran.value.code == "HZH213"


@pytest.mark.kill
class TestChatGateCrash:
    """Real processes killed between proposal, answer and write."""

    def _run(
        self, home: Path, *args: str, crash: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k != "HZ_CRASH_AT"}
        if crash:
            env["HZ_CRASH_AT"] = crash
        command = [sys.executable, str(SCRIPT), str(home), *args]
        return forkhz.run(command, capture_output=True, check=False, text=True, env=env)

    def test_killed_after_the_question_and_after_the_write_started(
        self, make_service: Callable[..., Any]
    ) -> None:
        """Killed after question.asked, then after the approved pause started: resumed in
        fresh processes, nothing is lost and the pause happens once."""
        service, heinzel_id, _ = make_service()
        home = service.home.root
        assert self._run(home, heinzel_id, "run", crash="after:question.asked").returncode == 137
        turn = str(_kinds(service, heinzel_id, "question.asked")[0].turn)
        resumed = self._run(home, heinzel_id, "resume", turn)
        assert resumed.stdout.split()[-1] == "waiting", resumed.stderr[-2000:]
        said = self._run(home, heinzel_id, "answer", "yes", crash="after:effect.started")
        assert said.returncode == 137, said.stderr[-2000:]
        last = self._run(home, heinzel_id, "resume", turn)
        assert last.stdout.split()[-1] == "finished", last.stderr[-2000:]
        assert len(_kinds(service, heinzel_id, "question.asked")) == 1
        assert len(_kinds(service, heinzel_id, "heinzel.paused")) == 1
        assert [e.data["n"] for e in _kinds(service, heinzel_id, "model.request")] == [1, 2]
        (finished,) = _kinds(service, heinzel_id, "turn.finished")
        assert finished.data["report"] == "pause: done: notes-digest is paused"

    def test_an_answer_before_the_wait_is_not_lost(self, make_service: Callable[..., Any]) -> None:
        """Killed before turn.waiting, the answer still resumes the turn and the pause happens."""
        service, heinzel_id, _ = make_service()
        home = service.home.root
        assert self._run(home, heinzel_id, "run", crash="after:question.asked").returncode == 137
        done = self._run(home, heinzel_id, "answer", "yes")
        assert done.stdout.split()[-1] == "finished", done.stderr[-2000:]
        assert len(_kinds(service, heinzel_id, "heinzel.paused")) == 1
        assert _kinds(service, heinzel_id, "turn.waiting") == []


def test_resume_of_a_proposal_wait_says_it_waits_on_the_answer(
    make_service: Callable[..., Any],
) -> None:
    """`hz heinzel resume` of a turn waiting on a proposed write does not resume it (which
    would take the write as denied): HZH360 names the proposal and the command that answers."""
    service, heinzel_id, _, state = _asked(make_service)
    env = {
        "HZ_HOME": str(service.home.root),
        "HZ_NOW": "2026-10-30T14:00:00Z",
        "HZ_CONFIG": "",
        "XDG_CONFIG_HOME": str(service.home.root / "xdg"),
    }
    result = CliRunner().invoke(hz, ["heinzel", "resume", "notes-digest"], env=env)
    assert result.exit_code == 1
    assert (
        f"HZH360: notes-digest's turn {state.turn} waits on your answer to: may it run pause?"
        in (result.output)
    )
    assert "hz heinzel answer notes-digest yes --proposal w1 (or no)" in result.output
    assert _kinds(service, heinzel_id, "turn.resumed") == []
    assert service.queries.row(heinzel_id)["state"] == "waiting"
