"""The ``handoff`` tool's runner, bound from ``[runners.*]`` (ADR 0029; issue 7 item 5).

`bind_runner` picks the bound runner: the only ``[runners.<name>]`` table (none: no
handoff tool, and the instructions say so). `BoundHandoff` is the engine's `Runner`:
it runs `run_handoff` once in a worker thread (a private working directory, its share
of the cap and the turn's time), keeps task, report and transcript in the turn body
(``{"kind": "handoff", ...}``), records the runner's spend as a ``usage`` event, and
hands the `HandoffRecord` to `EngineRecorder`, which merges it into the engine's one
``step.handoff`` line for the call. A handoff a crash interrupted is answered by the
engine with an interrupted result and a ``step.handoff`` with ``ok: interrupted`` and
the runner's name: never a second run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from heinzel.turns.record import EngineRecorder
from ledger.bodies import Bodies
from machines import Journal

if TYPE_CHECKING:  # the runners load when a ``[runners.<name>]`` table binds one
    from heinzel.engine.spec import HandoffRequest
    from heinzel.runners.base import AgentRunner

__all__ = ["BoundHandoff", "bind_runner"]


def bind_runner(runners: Mapping[str, object]) -> tuple[str, AgentRunner] | None:
    """The bound runner (the one ``[runners.<name>]`` table), or None when there is none."""
    if not runners:
        return None
    from heinzel.runners.factory import build_runner
    from heinzel.runners.settings import parse_runners_table

    tables = parse_runners_table(runners)
    if len(tables) != 1:
        return None
    name, settings = next(iter(tables.items()))
    return name, build_runner(name, settings)


class BoundHandoff:
    """The engine's `Runner` for one turn, over a bound `AgentRunner`."""

    def __init__(
        self,
        name: str,
        runner: AgentRunner,
        *,
        timeout_s: float,
        journal: Journal,
        bodies: Bodies,
        turn: str,
    ) -> None:
        self.name = name
        self.runner = runner
        self.timeout_s = timeout_s
        self.journal = journal
        self.bodies = bodies
        self.turn = turn
        self.recorder: EngineRecorder | None = None

    async def __call__(self, request: HandoffRequest) -> str:
        """Run the agent once; its report is the tool result."""
        from heinzel.runners.handoff import HandoffShare, run_handoff

        budget = float(request.budget_usd) if request.budget_usd > 0 else None
        share = HandoffShare(budget_usd=budget, timeout_s=self.timeout_s / 2)
        outcome = await asyncio.to_thread(
            run_handoff,
            self.runner,
            request.task,
            dict(request.files),
            contract=request.instructions,
            share=share,
        )
        self.bodies.append(self.turn, {"kind": "handoff", **outcome.body.model_dump(mode="json")})
        record: dict[str, Any] = outcome.record.model_dump(mode="json")
        used = outcome.body.usage
        tokens = used.input_tokens + used.output_tokens
        if record.get("cost_usd") or tokens:
            usage = {"kind": "handoff", "usd": record.get("cost_usd") or 0.0, "tokens": tokens}
            usage["tokens_cached"] = used.cache_read_tokens
            self.journal.append("usage", usage, turn=self.turn)
        if self.recorder is not None:
            self.recorder.handoff = record
        return outcome.tool_result
