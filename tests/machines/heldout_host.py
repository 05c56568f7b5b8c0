"""An outside-style host on the short API: per order it pages (a tool NOT replay-safe),
reads the customer (replay-safe), mails and pays (probed effects). Its world: files in
root; world.log, which the probes read, holds the payments' running total (the counter)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel

from machines import INTERRUPTED, Acted, Host, TurnContext, TypedSteps, effect, tool


class Order(BaseModel):
    order: str
    amount: int


class Plan(Order):
    customer: str
    paged: bool


def quiet(_: object) -> None:
    """No hook."""


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


class Shop(TypedSteps):
    def __init__(self, root: Path, hook: Callable[[str], object] = quiet) -> None:
        self.root, self.hook = root, hook

    def write(self, name: str, line: str) -> None:
        fd = os.open(self.root / name, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.write(fd, f"{line}\n".encode())
        os.fsync(fd)
        os.close(fd)
        self.hook(line)

    @tool(replay_safe=True)
    async def customer(self, order: str) -> str:
        return str(json.loads((self.root / "customers.json").read_text())[order])

    @tool(replay_safe=False)
    async def page(self, order: str) -> str:
        self.write("tools.log", f"page:{order}")
        return "paged"

    def recorded(self, key: str) -> bool:
        return any(line.split(" ")[0] == key for line in lines(self.root / "world.log"))

    @effect(probe=recorded, event="mail.sent")
    async def mail(self, key: str, to: str) -> None:
        self.write("world.log", key)

    @effect(probe=recorded, event="payment.made")
    async def pay(self, key: str, amount: int) -> None:
        paid = [int(line.split(" ")[1]) for line in lines(self.root / "world.log") if " " in line]
        self.write("world.log", f"{key} {(paid or [0])[-1] + amount}")

    async def gather(self, ctx: TurnContext) -> Order:
        order = ctx.key.split(":")[1]
        amount = json.loads((self.root / "orders.json").read_text())[order]
        return Order(order=order, amount=amount)

    async def think(self, ctx: TurnContext, order: Order) -> Plan:
        paged = await self.page(order.order) != INTERRUPTED
        customer = await self.customer(order.order)
        return Plan(**order.model_dump(), customer=customer, paged=paged)

    async def act(self, ctx: TurnContext, plan: Plan) -> Acted:
        await self.mail(f"shop@mail:{plan.order}", plan.customer)
        await self.pay(f"shop@pay:{plan.order}", plan.amount)
        return Acted("done", {"paged": plan.paged})


async def run(root: Path, hook: Callable[[object], object] = quiet) -> dict[str, str]:
    """Every order of ``orders.json``, one turn each (a restart resumes or skips it)."""
    clock = lambda: datetime(2026, 12, 1, 9, 0, tzinfo=UTC)  # noqa: E731
    shop = Shop(root, hook)
    with Host(shop, root / "spine", clock=clock, on_durable=[hook], max_resumes=99) as host:
        orders = json.loads((root / "orders.json").read_text())
        states = {o: await host.run(f"shop@order:{o}") for o in orders}
    return {o: f"{s.state} {s.disposition}" if s else "" for o, s in states.items()}


if __name__ == "__main__":
    asyncio.run(run(Path(sys.argv[1])))
