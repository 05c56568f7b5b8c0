"""`hz heinzel retry NAME "hint"` forks the last turn after its gather, through `hz`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from heinzel.turns import Turns, default_adapters
from heinzel.turns.fork import parent_inputs
from ledger.spine import read_events
from tests import forkhz
from tests.turns.conftest import CONTRACT


def _hz(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp),
        "XDG_CONFIG_HOME": str(tmp / "xdg"),
        "HZ_HOME": str(tmp / "home"),
        "HZ_CONFIG": "",
        "HZ_NOW": "2026-10-30T14:00:00.000Z",
        "HZ_USER": "me",
    }
    return forkhz.run(
        [sys.executable, "-m", "heinzel", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _events(tmp: Path) -> list[Any]:
    (spine,) = (tmp / "home" / "heinzel").glob("*/session.jsonl")
    return list(read_events(spine))


def _gathered(tmp: Path, turn: str) -> list[dict[str, Any]]:
    (body,) = (tmp / "home" / "heinzel").glob(f"*/turns/{turn}.jsonl")
    records = [json.loads(line) for line in body.read_text(encoding="utf-8").splitlines()]
    values = [r["value"] for r in records if r.get("kind") == "value"]
    return next(v["inputs"] for v in values if isinstance(v, dict) and "inputs" in v)


class TestRetryFork:
    """A retry is a fork of the parent: its inputs, the hint, its draft superseded."""

    def test_retry_reuses_the_parents_inputs_with_the_hint(self, tmp_path: Path) -> None:
        """The fork records parent_turn and from_step, reads the notes as the parent's
        gather staged them (not as they are now), gets the hint, and the parent's draft
        is superseded."""
        work = tmp_path / "work"
        work.mkdir()
        (work / "notes.txt").write_text("ship the rounding fix\n", encoding="utf-8")
        (work / "report.md").write_text("# Report\n", encoding="utf-8")
        contract = work / "digest.prose.md"
        contract.write_text(
            CONTRACT.format(render="always", done_when="every item of `notes` is covered"),
            encoding="utf-8",
        )
        assert _hz(tmp_path, "heinzel", "new", "--from", str(contract)).returncode == 0
        assert _hz(tmp_path, "approve", "notes-digest").returncode == 0
        woke = _hz(tmp_path, "heinzel", "wake", "notes-digest", "--message", "now", "--json")
        assert woke.returncode == 0, woke.stderr
        parent = json.loads(woke.stdout)["turn"]
        (work / "notes.txt").write_text("changed since\n", encoding="utf-8")
        retried = _hz(tmp_path, "heinzel", "retry", "notes-digest", "shorter please", "--json")
        assert retried.returncode == 0, retried.stderr
        assert json.loads(retried.stdout)["parent"] == parent
        started = [e for e in _events(tmp_path) if e.kind == "turn.started"]
        fork = started[-1]
        assert fork.data["cause"] == "retry"
        assert (fork.data["parent_turn"], fork.data["from_step"]) == (parent, "think")
        inputs = {i["name"]: i["content"] for i in _gathered(tmp_path, str(fork.turn))}
        assert "ship the rounding fix" in inputs["notes"]
        assert "changed since" not in json.dumps(inputs)
        assert inputs["hint"] == "shorter please"
        finished = [e for e in _events(tmp_path) if e.kind == "turn.finished"]
        assert finished[-1].turn == fork.turn and finished[-1].data["disposition"] == "drafted"
        shown = json.loads(_hz(tmp_path, "heinzel", "show", "notes-digest", "--json").stdout)
        turns = {t["id"]: t for t in shown["turns"]}
        assert turns[fork.turn]["parent_turn"] == parent
        drafts = json.loads(_hz(tmp_path, "drafts", "--json").stdout)
        assert [d["turn"] for d in drafts] == [fork.turn], drafts


def test_the_parents_gathered_inputs_are_found_when_its_think_start_is_carried(
    make_service: Callable[..., Any],
) -> None:
    """A turn written now carries its think step's start on its first model request
    (docs/spine.md): the fork still finds the gather's result there and reuses it."""
    service, heinzel_id, _ = make_service()
    result = Turns(service).wake(heinzel_id, "now", adapters=default_adapters(service.settings))
    spine = service.home.spine_path(heinzel_id)
    assert "step.started" not in [e.kind for e in read_events(spine)]  # carried, not a line
    inputs = parent_inputs(spine, spine.parent, str(result["turn"]))
    assert inputs is not None
    assert "ship the rounding fix" in json.dumps(inputs)
