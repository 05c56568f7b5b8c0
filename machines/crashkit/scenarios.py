"""Scenarios for the crash matrix (`machines.crashkit.matrix`), one turn each.

``drafting``: a schedule turn that calls the model twice, a replay-safe search and
an unsafe handoff, and places one draft probed in the world. ``asking``: a turn
that asks a question, probed in hz's own record. ``unprobed``: the same draft
with no probe, deliberately unsafe: the matrix must report the double.
"""

from __future__ import annotations

from machines.core.fold import TurnState
from machines.core.resume import Pins
from machines.crashkit.matrix import Rig
from machines.crashkit.testing import HANDOFF, SEARCH, ScriptedSteps
from machines.keys import Wake, schedule

OWNER = "hz-matrix"
WAKES = [Wake("schedule", schedule(OWNER, "2026-10-30T15:00"))]


def _steps(rig: Rig, **options: object) -> ScriptedSteps:
    return ScriptedSteps(
        rig.world,
        owner=OWNER,
        charge=rig.charge,
        on_tool=rig.tool_ran,
        **options,  # type: ignore[arg-type]
    )


async def drafting(rig: Rig) -> TurnState:
    """Two model requests, two tools, one draft placed with a world probe."""
    steps = _steps(rig, model_calls=2, usd=0.25, tools=[SEARCH, HANDOFF])
    return await rig.run(rig.journal(), steps, turn="t1", wakes=WAKES, pins=Pins(1))


async def asking(rig: Rig) -> TurnState:
    """One question asked, its probe in the journal (a local effect)."""
    steps = _steps(rig, decision="ask", probe="local")
    return await rig.run(rig.journal(), steps, turn="t1", wakes=WAKES, pins=Pins(1))


async def unprobed(rig: Rig) -> TurnState:
    """Deliberately unsafe: the draft's effect declares no probe."""
    steps = _steps(rig, probe="none")
    return await rig.run(rig.journal(), steps, turn="t1", wakes=WAKES, pins=Pins(1))
