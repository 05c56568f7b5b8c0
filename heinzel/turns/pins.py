"""What a resumed turn is pinned to (ADR 0049 statement 17): the contract version and the
lessons its ``turn.started`` recorded, read back whatever was approved or learnt since.

The vocabulary pin is the machine's (`machines.resume`, HZM009); skills are pinned by
fingerprint in the same record once turns resolve them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from heinzel.engine import LessonView
from heinzel.errors import HeinzelError
from ledger.spine import Spine, read_events

__all__ = ["pinned_fingerprint", "pinned_lessons"]

APPROVING = ("contract.approved", "contract.amended")


def pinned_fingerprint(spine: Spine, version: int) -> str:
    """The fingerprint the spine approved ``version`` with (HZH290 when it never was)."""
    for event in read_events(spine.path):
        if event.kind in APPROVING and event.data.get("version") == version:
            return str(event.data["fingerprint"])
    raise HeinzelError(
        "HZH290",
        f"the turn is pinned to contract v{version}, which this session never approved",
        "`hz heinzel verify NAME` checks the spine; stop the turn (`hz heinzel stop NAME`)",
    )


def pinned_lessons(
    rows: Iterable[Mapping[str, Any]], pins: Mapping[str, Any] | None
) -> list[LessonView]:
    """The active lessons, only those up to the pinned ``lessons_seq`` when pinned (a
    lesson recorded while the turn was open is for the next turn)."""
    bound: int | None = None
    if pins is not None and "lessons_seq" in pins:
        bound = -1 if pins["lessons_seq"] is None else int(pins["lessons_seq"])
    return [
        LessonView(str(one["seq"]), one["sentence"])
        for one in rows
        if not one["dismissed"] and (bound is None or int(one["seq"]) <= bound)
    ]
