"""The index rebuilt from the spines equals the index maintained event by event."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from heinzel.errors import HeinzelError
from heinzel.index.projection import TABLES
from heinzel.service import Service
from tests.heinzel.conftest import GOOD, SteppingClock, variant


def dump(service: Service) -> dict[str, list[dict[str, Any]]]:
    db = service.index.db
    tables = ("heinzel", *TABLES)
    return {t: [dict(r) for r in db.query(f"SELECT * FROM {t} ORDER BY 1, 2")] for t in tables}


def synthetic_turn(service: Service, heinzel_id: str, rng: random.Random, n: int) -> None:
    """Turn events as the engine will write them, appended straight to the spine."""
    turn = f"t{n:04d}"
    with service.open_spine(heinzel_id) as spine:
        spine.append(
            "turn.started",
            {"cause": "schedule", "causes": ["schedule"], "contract_version": 1},
            turn=turn,
            key=f"k{n}",
        )
        roll = rng.random()
        if roll < 0.3:
            spine.append(
                "turn.waiting", {"step": "act", "until": "2026-11-09T00:00:00.000Z"}, turn=turn
            )
            return
        if roll < 0.6:
            spine.append(
                "draft.placed",
                {"asset": "doc:x", "output": "section", "contract_version": 1, "hash": "sha256:00"},
                turn=turn,
                key=f"d{n}",
            )
        if roll < 0.8:
            spine.append(
                "lesson.recorded", {"sentence": f"lesson {n}"}, turn=turn, short_text=("sentence",)
            )
        spine.append(
            "turn.finished",
            {"disposition": "drafted", "cost_usd": 0.01 * n},
            turn=turn,
            key=f"k{n}",
        )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_rebuilt_index_equals_maintained(
    service: Service, clock: SteppingClock, tmp_path: Path, seed: int
) -> None:
    """A long random history of user verbs and turn events, then reindex: same rows."""
    rng = random.Random(seed)
    weekly = tmp_path / "weekly-report.prose.md"
    weekly.write_text((GOOD / "weekly-report.prose.md").read_text())
    wider = variant(weekly, "max_usd: 0.5", "max_usd: 0.7", "wider.prose.md")
    ids = [
        r["id"]
        for r in service.create_from_files(
            [str(GOOD / "weekly-report.prose.md"), str(GOOD / "standup-notes.prose.md")]
        )
    ]
    verbs = [
        "approve",
        "pause",
        "unpause",
        "retire",
        "unretire",
        "amend",
        "decline",
        "turn",
        "dismiss",
        "rename",
    ]
    for n in range(120):
        clock.step(hours=rng.randint(1, 30))
        heinzel_id = rng.choice(ids)
        verb = rng.choice(verbs)
        try:
            if verb == "approve":
                service.approve(heinzel_id)
            elif verb in ("pause", "unpause", "retire", "unretire"):
                service.lifecycle(heinzel_id, verb)
            elif verb == "amend" and service.resolve(heinzel_id)["name"].startswith("weekly"):
                service.amend(heinzel_id, str(wider))
            elif verb == "decline":
                service.decline(heinzel_id)
            elif verb == "turn" and service.resolve(heinzel_id)["contract_version"]:
                synthetic_turn(service, heinzel_id, rng, n)
            elif verb == "dismiss":
                lessons = [les for les in service.lessons(heinzel_id) if not les["dismissed"]]
                if lessons:
                    service.dismiss(heinzel_id, str(rng.choice(lessons)["seq"]))
            elif verb == "rename":
                service.rename(heinzel_id, f"{service.resolve(heinzel_id)['name'][:20]}-{n}")
        except HeinzelError:
            pass  # a verb that makes no sense now is refused; the history goes on
    maintained = dump(service)
    assert sum(len(rows) for rows in maintained.values()) > 10
    service.reindex()
    assert dump(service) == maintained
