"""A tiny asyncio host that is not hz: a bot that answers support tickets.

It brings its own steps, an in-memory journal and body, a fake outbox (its world)
and its own clock, and drives one turn per ticket through `machines`. The second
ticket needs a human's answer first: its turn waits, and the host's "tick" wakes it.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from machines import (
    Acted,
    Effect,
    Facts,
    InMemoryBody,
    InMemoryJournal,
    ModelReply,
    PendingWait,
    Pins,
    Presence,
    Session,
    Settings,
    Steer,
    TurnContext,
    Wait,
    Wake,
    WorldProbe,
    due_waits,
    fold,
    keys,
)


class Outbox:
    """The bot's world: replies it has sent, by idempotency key."""

    def __init__(self) -> None:
        self.sent: dict[str, str] = {}

    async def send(self, key: str) -> dict[str, str]:
        self.sent[key] = "sent"
        return {"sent": key}

    async def probe(self, key: str) -> Presence:
        return "present" if key in self.sent else "absent"


class TicketSteps:
    """gather -> think -> outcome -> act for one support ticket."""

    def __init__(self, tickets: dict[str, str], outbox: Outbox) -> None:
        self.tickets = tickets
        self.outbox = outbox

    async def gather(self, ctx: TurnContext) -> Any:
        ticket = str(ctx.causes[0]["key"]).split("@")[1]
        return {"ticket": ticket, "words": len(self.tickets[ticket].split())}

    async def think(self, ctx: TurnContext, gathered: Any) -> Any:
        async def rule_model(steers: list[Steer]) -> ModelReply:
            urgent = gathered["words"] > 5
            return ModelReply({"urgent": urgent, "steers": len(steers)}, usd=0.01)

        return {**gathered, **await ctx.model(rule_model)}

    async def outcome(self, ctx: TurnContext, thought: Any) -> Any:
        if thought["urgent"] and ctx.woken_by != "answer":
            return Wait(on={"kind": "answer", "key": f"ok-{thought['ticket']}"})
        return thought

    async def act(self, ctx: TurnContext, decided: Any) -> Acted:
        key = f"bot@reply:{decided['ticket']}"
        await ctx.effect(
            Effect("reply", key, self.outbox.send, WorldProbe(self.outbox.probe), "reply.sent")
        )
        return Acted("drafted")


async def main() -> dict[str, Any]:
    """Run two tickets, answer the waiting one, and report what happened."""
    now = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
    journal = InMemoryJournal(lambda: now)
    outbox = Outbox()
    tickets = {"T1": "printer jammed", "T2": "checkout is down for every customer in the EU"}
    steps = TicketSteps(tickets, outbox)
    session = Session(
        journal, InMemoryBody(), steps, Settings(clock=lambda: now, sleep=asyncio.sleep)
    )

    states = {}
    for n, ticket in enumerate(tickets, start=1):
        wake = Wake("asked", keys.asked("bot", ticket))
        states[ticket] = (await session.start(f"turn-{n}", [wake], Pins())).state

    # The host's tick: a human answered T2's question; decide which waits fire.
    waiting = [PendingWait.from_state(fold(t, journal.turn_events(t))) for t in ("turn-2",)]
    facts = Facts(answers=frozenset({"ok-T2"}))
    for due in due_waits(now, [w for w in waiting if w], facts):
        final = await session.resume(due.turn, due.woken_by)
        states["T2 after the answer"] = final.state if final else "nothing to do"

    return {"states": states, "sent": sorted(outbox.sent), "events": len(journal.events)}


if __name__ == "__main__":
    print(asyncio.run(main()))
