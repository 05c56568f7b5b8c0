"""A turn abandoned on its timeout first probes the effects it started (issue 11, finding 5)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ledger.spine import read_events
from machines.stores.journal import expand_carried
from tests import forkhz

SCRIPT = Path(__file__).parent / "slow_act_turn.py"
RESUME = Path(__file__).parent / "resume_turn.py"
HZ = str(Path(sys.executable).with_name("hz"))


@pytest.mark.kill
def test_a_draft_written_before_a_kill_past_the_timeout_is_recorded(
    make_service: Callable[..., Any],
) -> None:
    """Killed right after the document write with its act past the timeout, the turn is
    recovered in a fresh process: it ends abandoned timeout, but only after the probe
    found the draft, so the spine has its draft.placed and `hz drafts` lists it."""
    service, heinzel_id, folder = make_service()
    child = forkhz.run(
        [sys.executable, str(SCRIPT), str(service.home.root), heinzel_id],
        capture_output=True,
        text=True,
        check=False,
    )
    assert child.returncode == 137, child.stderr
    assert "hz:draft key=" in (folder / "report.md").read_text(encoding="utf-8")
    env = {**os.environ, "HZ_HOME": str(service.home.root), "HZ_NOW": "2026-10-30T15:00:00Z"}
    resume = [sys.executable, str(RESUME), str(service.home.root), heinzel_id]
    recovered = forkhz.run(resume, capture_output=True, text=True, check=False)
    assert "result abandoned abandoned" in recovered.stdout, recovered.stderr
    events = list(expand_carried(read_events(service.home.spine_path(heinzel_id))))
    first = next(e.turn for e in events if e.kind == "turn.started")
    [finished] = [e for e in events if e.kind == "turn.finished" and e.turn == first]
    assert (finished.data["disposition"], finished.data["reason"]) == ("abandoned", "timeout")
    done = [e for e in events if e.kind == "effect.done" and e.turn == first]
    assert [e.data.get("probed") for e in done] == [True]
    [placed] = [e for e in events if e.kind == "draft.placed" and e.turn == first]
    drafts = forkhz.run([HZ, "drafts", "--json"], env=env, capture_output=True, text=True)
    assert drafts.returncode == 0, drafts.stderr
    assert [d["key"] for d in json.loads(drafts.stdout)] == [placed.key]
