"""Recover a crashed turn in a fresh process: ``resume_turn.py HOME ID``.

Resumes the session's first turn with ``Service.resume_turn(..., "recovery")`` until it
is final (at most four times) and prints its state and disposition.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

import pydantic_ai.models

from heinzel.config import HeinzelSettings, Settings
from heinzel.service import Service
from heinzel.store.home import Home
from heinzel.turns import Turns, default_adapters
from ledger.spine import read_events

pydantic_ai.models.ALLOW_MODEL_REQUESTS = False
NOW = datetime(2026, 10, 30, 14, 0, tzinfo=UTC)


def main(home: Path, heinzel_id: str) -> None:
    settings = Settings(heinzel=HeinzelSettings(home=home))
    service = Service(Home(home), lambda: NOW, settings, owner="me")
    turn = next(e.turn for e in read_events(service.home.spine_path(heinzel_id)) if e.turn)
    state = None
    for _ in range(4):
        state = Turns(service).resume_turn(
            heinzel_id, str(turn), "recovery", adapters=default_adapters(settings)
        )
        if state is None or state.final:
            break
    print("result", state.state if state else "final", state.disposition if state else "")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
