"""Kill tests: a real process killed during think resumes without a second spend."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests import forkhz
from tests.waits import HANG

SCRIPT = Path(__file__).with_name("crash_turn.py")


def run(directory: Path, kill_after: int, mode: str = "draft") -> int:
    done = forkhz.run(
        [sys.executable, str(SCRIPT), str(directory), mode, str(kill_after)],
        capture_output=True,
        timeout=HANG,
        check=False,
    )
    assert done.returncode in (0, 137), done.stderr.decode()[-2000:]
    return done.returncode


@pytest.mark.kill
class TestKilledDuringThink:
    @pytest.mark.parametrize("kill_after", [1, 2, 3])
    def test_no_recorded_request_is_spent_twice(self, tmp_path: Path, kill_after: int) -> None:
        """Killed after the n-th checkpoint, a fresh process finishes with three requests in
        all: every request recorded before the kill is continued from, never re-sent."""
        assert run(tmp_path, kill_after) == 137
        assert not (tmp_path / "result.json").exists()
        assert run(tmp_path, 0) == 0
        result = json.loads((tmp_path / "result.json").read_text())
        sent = (tmp_path / "requests.log").read_text().split()
        assert result == {"status": "outcome", "usd": "0.00303", "requests": 3}
        assert sorted(sent) == ["0", "1", "2"]
        lines = [json.loads(x) for x in (tmp_path / "spine.jsonl").read_text().splitlines()]
        assert [x["data"]["n"] for x in lines if x["kind"] == "step.model"] == [1, 2, 3]

    def test_an_unsafe_tool_cut_off_is_never_rerun(self, tmp_path: Path) -> None:
        """Killed inside the handoff runner, the resumed turn gives the model an interrupted
        result and never runs the runner again."""
        assert run(tmp_path, -1, "handoff") == 137
        assert run(tmp_path, 0, "handoff") == 0
        assert (tmp_path / "runner.log").read_text().split() == ["check"]
        assert (tmp_path / "requests.log").read_text().split() == ["0", "1"]
        lines = [json.loads(x) for x in (tmp_path / "spine.jsonl").read_text().splitlines()]
        handoffs = [x["data"] for x in lines if x["kind"] == "step.handoff"]
        assert [(h["id"], h["ok"]) for h in handoffs] == [("h1", "interrupted")]

    def test_a_crash_between_proposal_and_answer_loses_nothing(self, tmp_path: Path) -> None:
        """Killed right after question.asked, a fresh process answers from the body: the write
        runs once and the first request is not sent again."""
        assert run(tmp_path, 2, "chat") == 137
        assert run(tmp_path, 0, "answer") == 0
        assert (tmp_path / "writes.log").read_text().split() == ["ship", "it"]
        assert (tmp_path / "requests.log").read_text().split() == ["0", "1"]
        result = json.loads((tmp_path / "result.json").read_text())
        assert (result["status"], result["requests"]) == ("outcome", 2)
        spine = (tmp_path / "spine.jsonl").read_text()
        assert '"question.asked"' in spine and "ship it" not in spine
