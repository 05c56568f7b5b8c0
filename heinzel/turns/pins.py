"""What a resumed turn is pinned to (ADR 0049 statement 17): the contract version, the
skills and the lessons its ``turn.started`` recorded, read back whatever was approved,
installed or learnt since.

The vocabulary pin is the machine's (`machines.core.resume`, HZM009). Skills are pinned by
fingerprint (`turn_skills`): hz keeps no copy of a skill's text, so a resumed turn finds a
copy with the pinned fingerprint in the skill directories or stops with ``HZH276``, never
running under advice it did not start with.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from heinzel.contract import CompiledContract
from heinzel.contract.skills import Skill, Turn, copies, load_skill, skills_for_turn
from heinzel.contract.types import split_method, split_requirement
from heinzel.engine import LessonView
from heinzel.errors import HeinzelError
from ledger.spine import Spine, read_events

__all__ = ["pinned_fingerprint", "pinned_lessons", "turn_skills"]

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


def _touches(contract: CompiledContract) -> Turn:
    """The asset types and capabilities of ``contract``, for the skills' ``applies``."""
    hz = contract.hz
    capabilities = {split_requirement(one)[0] for one in hz.requires}
    capabilities |= {split_method(one.from_)[0] for one in hz.inputs.values()}
    capabilities |= {split_method(one)[0] for one in hz.publishes}
    assets = {one.asset.partition(":")[0] for one in hz.outputs.values()}
    return Turn(asset_types=frozenset(assets), capabilities=frozenset(capabilities))


def turn_skills(
    contract: CompiledContract, dirs: Sequence[Path], pins: Mapping[str, Any] | None
) -> list[Skill]:
    """A new turn's skills (``pins`` None: `skills_for_turn`), or exactly the skills a
    resumed turn's ``pins`` name, each from a copy with its pinned fingerprint (HZH276)."""
    if pins is None:
        return skills_for_turn(contract.hz.uses, dirs, _touches(contract))
    skills = []
    for name, fingerprint in (pins.get("skills") or {}).items():
        found = [load_skill(path) for path in copies(str(name), dirs)]
        same = [one for one in found if one.fingerprint == fingerprint]
        if not same:
            now = f"; {found[-1].path} is now {found[-1].fingerprint[:19]}" if found else ""
            raise HeinzelError(
                "HZH276",
                f"the turn is pinned to skill {name} at {str(fingerprint)[:19]}, "
                f"which no skill directory holds any more{now}",
                f"restore {name}/SKILL.md as it was to resume the turn, or stop it "
                "(`hz heinzel stop NAME`) and wake it again under the new text",
            )
        skills.append(same[-1])
    return skills
