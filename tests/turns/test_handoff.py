"""The handoff tool bound to a runner: one run, one step.handoff line, never rerun."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from heinzel.runners.factory import build_runner
from heinzel.runners.settings import CommandSettings, parse_runner_settings
from heinzel.turns import TurnHost, default_adapters
from ledger.bodies import Bodies
from ledger.spine import read_events
from machines import Wake, keys

from .handoff_turn import scripted_model

FAKE = Path(__file__).parent.parent / "runners" / "fake_agent.py"


def _settings() -> CommandSettings:
    parsed = parse_runner_settings(
        "fake",
        {
            "kind": "command",
            "command": [sys.executable, str(FAKE), "text", "prompt={prompt_file}"],
            "command_enforces_read_only": True,
            "tools": ["read"],
        },
    )
    assert isinstance(parsed, CommandSettings)
    return parsed


class TestHandoff:
    """A turn whose model hands a task to the bound runner."""

    def test_one_step_handoff_line_with_the_record(self, make_service: Callable[..., Any]) -> None:
        """The runner runs once; step.handoff has runner and status; the body has the report."""
        service, heinzel_id, _ = make_service()
        host = TurnHost(
            service, model=scripted_model(), runner=("fake", build_runner("fake", _settings()))
        )
        wake = Wake("asked", keys.asked(heinzel_id, "r1"))
        states = host.run_wakes(heinzel_id, [wake], adapters=default_adapters(service.settings))
        assert [s.disposition for s in states] == ["drafted"], states
        lines = [e for e in read_events(service.home.spine_path(heinzel_id)) if e.turn]
        handoffs = [e for e in lines if e.kind == "step.handoff"]
        assert len(handoffs) == 1
        assert handoffs[0].data["runner"] == "fake"
        assert handoffs[0].data["status"] == "completed"
        assert not [e for e in lines if e.kind == "step.tool" and e.data.get("tool") == "handoff"]
        body = Bodies(service.home.session_dir(heinzel_id)).read(str(states[0].turn)) or []
        assert [r for r in body if r.get("kind") == "handoff"]

    def test_an_interrupted_handoff_is_never_rerun(self, make_service: Callable[..., Any]) -> None:
        """Killed inside the runner, the resumed turn gets an interrupted result, no rerun."""
        service, heinzel_id, _ = make_service()
        home = service.home.root
        script = [sys.executable, str(Path(__file__).parent / "handoff_turn.py"), str(home)]
        killed = subprocess.run([*script, heinzel_id, "run"], capture_output=True, check=False)
        assert killed.returncode == 137
        turn = next(e.turn for e in read_events(service.home.spine_path(heinzel_id)) if e.turn)
        resumed = subprocess.run(
            [*script, heinzel_id, "resume", str(turn)], capture_output=True, check=False, text=True
        )
        assert resumed.stdout.strip().splitlines()[-1] == "drafted", resumed.stderr[-2000:]
        assert (home / "runner.log").read_text().splitlines() == ["check the notes"]
        lines: Sequence[Any] = list(read_events(service.home.spine_path(heinzel_id)))
        handoff = next(e for e in lines if e.kind == "step.handoff")
        assert (handoff.data["ok"], handoff.data["runner"]) == ("interrupted", "fake")
