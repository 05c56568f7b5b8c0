"""The engine's overhead and its spine budget.

A turn on the offline model (three inputs, two tool calls, a draft) through
`heinzel.engine.think` (context, checkpoints, body records, caps) against the
same pydantic-ai Agent run bare on the same messages; and the bytes the turn's
checkpoints take as spine lines (target: at most 1 KB for a drafted turn).
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from decimal import Decimal

from pydantic_ai import Agent

from heinzel.engine import (
    Budget,
    InputSpec,
    Outcome,
    Pricing,
    SpineView,
    TurnServices,
    TurnSpec,
    build_context,
    build_toolset,
    offline_model,
    think,
)
from heinzel.engine.testing import MemoryRecorder, spine_bytes

AT = datetime(2026, 10, 30, 15, tzinfo=UTC)
DONE = "every item of `merged_prs` is covered"
SPEC = TurnSpec(
    turn="01JBENCH000000000000000000",
    cause="schedule",
    contract_name="weekly-report",
    contract_version=1,
    body=f"### Goal\n- `section`: this week\n\n### Done when\n- {DONE}\n",
    started_at=AT,
    inputs=(
        InputSpec("merged_prs", '[{"title": "Fix checkout"}, {"title": "Add PayPal"}]'),
        InputSpec("issues", "- CHK-1 done\n- CHK-2 open"),
        InputSpec("events", "- Mon: planning"),
    ),
    outputs=("section",),
    done_when=(DONE,),
    max_usd=Decimal("0.5"),
)
ROUNDS = 40


async def engine_turn() -> MemoryRecorder:
    recorder = MemoryRecorder()
    context = build_context(SPEC, SpineView())
    budget = Budget(Pricing(at=AT), Decimal("0.5"))
    result = await think(SPEC, context, model=offline_model(), recorder=recorder, budget=budget)
    assert result.disposition.disposition == "drafted"
    return recorder


async def bare_turn() -> None:
    context = build_context(SPEC, SpineView())
    agent = Agent(
        offline_model(),
        instructions=context.instructions,
        output_type=Outcome,
        toolsets=[build_toolset(SPEC, TurnServices())],
    )
    result = await agent.run(message_history=context.messages)
    assert result.output.draft is not None


def timed(make: object) -> float:
    async def rounds() -> float:
        start = time.perf_counter()
        for _ in range(ROUNDS):
            await make()  # type: ignore[operator]
        return (time.perf_counter() - start) / ROUNDS

    return asyncio.run(rounds())


def main() -> None:
    timed(engine_turn)
    timed(bare_turn)
    ours, bare = timed(engine_turn), timed(bare_turn)
    print(f"offline turn under hz:   {ours * 1000:7.2f} ms")
    print(f"same agent run bare:     {bare * 1000:7.2f} ms")
    print(f"ratio:                   {ours / bare:7.2f}x")
    recorder = asyncio.run(engine_turn())
    size = spine_bytes(recorder.lines, SPEC.turn, AT)
    kinds = ", ".join(kind for kind, _ in recorder.lines)
    print(f"checkpoint spine bytes:  {size:7d} B for {len(recorder.lines)} lines ({kinds})")
    verdict = "PASS" if size <= 1024 else "MISS"
    print(f"{verdict} engine checkpoint spine bytes of a drafted turn: {size} B (target 1024 B)")
    vendor = [
        (k, {**d, "id": "toolu_01A09q90qw90lq917835lq9"} if "id" in d else d)
        for k, d in recorder.lines
    ]
    wide = spine_bytes(vendor, SPEC.turn, AT)
    print(f"same, vendor-length ids: {wide:7d} B (a provider's 29-character tool call ids)")


if __name__ == "__main__":
    main()
