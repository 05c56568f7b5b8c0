"""A tiny asyncio host that is not hz: a bot that answers support tickets.

It brings its typed steps, a fake outbox (its world) and its own clock; `Host` keeps its
turns (in memory here; give it a directory for a spine on disk) with default words: a
``job`` wakes a turn, act ends it ``done``. The second ticket needs a human's answer
first: its turn waits, and the host's "tick" wakes it.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from machines import (
    Acted,
    Facts,
    Host,
    ModelReply,
    PendingWait,
    Presence,
    Steer,
    TurnContext,
    TypedSteps,
    Wait,
    due_waits,
    effect,
)


class Ticket(BaseModel):
    ticket: str
    words: int


class Triage(Ticket):
    urgent: bool


class TicketSteps(TypedSteps):
    """gather -> think -> outcome -> act for one support ticket; its world: an outbox."""

    def __init__(self, tickets: dict[str, str]) -> None:
        self.tickets = tickets
        self.sent: dict[str, str] = {}

    async def gather(self, ctx: TurnContext) -> Ticket:
        ticket = ctx.key.split(":")[1]
        return Ticket(ticket=ticket, words=len(self.tickets[ticket].split()))

    async def think(self, ctx: TurnContext, ticket: Ticket) -> Triage:
        async def rule_model(steers: list[Steer]) -> ModelReply:
            return ModelReply({"urgent": ticket.words > 5}, usd=0.01)

        return Triage(**ticket.model_dump(), **await ctx.model(rule_model))

    async def outcome(self, ctx: TurnContext, triage: Triage) -> Triage | Wait:
        if triage.urgent and ctx.woken_by != "answer":
            return Wait(on={"kind": "answer", "key": f"ok-{triage.ticket}"})
        return triage

    async def replied(self, key: str) -> Presence:
        return "present" if key in self.sent else "absent"

    @effect(probe=replied, event="reply.sent")
    async def reply(self, key: str, ticket: str) -> dict[str, str]:
        self.sent[key] = ticket
        return {"sent": key}

    async def act(self, ctx: TurnContext, triage: Triage) -> Acted:
        await self.reply(f"bot@reply:{triage.ticket}", triage.ticket)
        return Acted("done")


async def main() -> dict[str, Any]:
    """Run two tickets, answer the waiting one, and report what happened."""
    now = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
    steps = TicketSteps({"T1": "printer jammed", "T2": "checkout is down for every EU customer"})
    host = Host(steps, clock=lambda: now)

    states, waiting = {}, []
    for ticket in steps.tickets:
        state = await host.run(f"bot@ticket:{ticket}")
        assert state is not None
        states[ticket] = state.state
        waiting.append(PendingWait.from_state(state))

    # The host's tick: a human answered T2's question; decide which waits fire.
    facts = Facts(answers=frozenset({"ok-T2"}))
    for due in due_waits(now, [w for w in waiting if w], facts):
        final = await host.session.resume(due.turn, due.woken_by)
        states["T2 after the answer"] = final.state if final else "nothing to do"

    return {"states": states, "sent": sorted(steps.sent)}


if __name__ == "__main__":
    print(asyncio.run(main()))
