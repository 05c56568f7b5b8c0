"""A worker of the Postgres kill loop (tests/machines/test_postgres.py): orders from the
queue, each paged (a tool NOT replay-safe), mailed and paid (effects probed through
``world.log``, a file every worker appends to). ``python pg_worker.py URL ROOT N`` kills
itself with SIGKILL at its N-th point (an append made durable, or a world write; 0:
never) and otherwise works until the queue has no job left undone."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from machines import INTERRUPTED, Acted, Host, TurnContext, TypedSteps, effect, tool


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


class Orders(TypedSteps):
    def __init__(self, root: Path, hook: Any) -> None:
        self.root, self.hook = root, hook

    def write(self, name: str, line: str) -> None:
        fd = os.open(self.root / name, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.write(fd, f"{line}\n".encode())
        os.fsync(fd)
        os.close(fd)
        self.hook(line)

    @tool(replay_safe=False)
    async def page(self, order: str) -> str:
        self.write("tools.log", f"page:{order}")
        return "paged"

    def recorded(self, key: str) -> bool:
        return any(line.split(" ")[0] == key for line in lines(self.root / "world.log"))

    @effect(probe=recorded, event="mail.sent")
    async def mail(self, key: str) -> None:
        self.write("world.log", key)

    @effect(probe=recorded, event="payment.made")
    async def pay(self, key: str, amount: int) -> None:
        self.write("world.log", f"{key} {amount}")

    async def gather(self, ctx: TurnContext) -> dict[str, Any]:
        order = ctx.key.split(":")[1]
        return {"order": order, "amount": 10 * int(order[1:])}

    async def think(self, ctx: TurnContext, order: dict[str, Any]) -> dict[str, Any]:
        return {**order, "paged": await self.page(order["order"]) != INTERRUPTED}

    async def act(self, ctx: TurnContext, plan: dict[str, Any]) -> Acted:
        await self.mail(f"shop@mail:{plan['order']}")
        await self.pay(f"shop@pay:{plan['order']}", plan["amount"])
        return Acted("done", {"paged": plan["paged"]})


def clock() -> datetime:
    return datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def main(url: str, root: Path, at: int) -> int:
    seen = 0

    def hook(_what: object) -> None:
        nonlocal seen
        seen += 1
        if seen == at:  # a real SIGKILL: no cleanup, nothing after
            os.kill(os.getpid(), signal.SIGKILL)

    host = Host(
        Orders(root, hook), postgres=url, clock=clock, on_durable=[hook], lease=1.0, max_resumes=99
    )
    try:
        return asyncio.run(host.work())
    finally:
        host.close()


if __name__ == "__main__":
    print(main(sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])))
