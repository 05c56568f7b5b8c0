"""A worker of the Postgres kill loop (tests/machines/test_postgres.py): orders from the
queue, each paged (a tool NOT replay-safe), mailed and paid (effects probed through
``world.log``, a file every worker appends to). ``python pg_worker.py URL ROOT N`` kills
itself with SIGKILL at its N-th point (an append made durable, or a world write; 0:
never) and otherwise works until the queue has no job left undone. ``python pg_worker.py
URL ROOT long`` works a queue of `Long` jobs that block (the lease test); ``pause:N``
says ``paused`` after its N-th world write and waits for a line on stdin (the restart
test)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Callable
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


def wall() -> datetime:
    """The worker's clock: a lease lapses in it (a fixed clock would never let one)."""
    return datetime.now(UTC)


def file_clock(path: Path) -> Callable[[], datetime]:
    """A clock the test moves: the ISO time written in ``path``."""
    return lambda: datetime.fromisoformat(path.read_text(encoding="utf-8"))


class Long(TypedSteps):
    """One job whose gather outlasts any lease while ``block`` (it says ``entered`` on
    stdout, then waits for good); its act mails once, probed through ``world.log``."""

    def __init__(self, root: Path, block: bool) -> None:
        self.root, self.block = root, block

    def recorded(self, key: str) -> bool:
        return key in lines(self.root / "world.log")

    @effect(probe=recorded, event="mail.sent")
    async def mail(self, key: str) -> None:
        with open(self.root / "world.log", "a", encoding="utf-8") as log:
            log.write(f"{key}\n")

    async def gather(self, ctx: TurnContext) -> dict[str, Any]:
        if self.block:
            print("entered", flush=True)
            await asyncio.Event().wait()
        return {"job": ctx.key.split(":")[1]}

    async def act(self, ctx: TurnContext, job: dict[str, Any]) -> Acted:
        await self.mail(f"long@mail:{job['job']}")
        return Acted("done")


def long_main(url: str, root: Path) -> int:
    """``python pg_worker.py URL ROOT long``: work the queue with a job that blocks, on
    the clock in ``ROOT/clock``, under a lease of 1 s of that clock."""
    host = Host(Long(root, block=True), postgres=url, clock=file_clock(root / "clock"), lease=1.0)
    try:
        return asyncio.run(host.work())
    finally:
        host.close()


def main(url: str, root: Path, at: int, pause: int = 0) -> int:
    seen = writes = 0

    def hook(what: object) -> None:
        nonlocal seen, writes
        seen += 1
        if seen == at:  # a real SIGKILL: no cleanup, nothing after
            os.kill(os.getpid(), signal.SIGKILL)
        writes += isinstance(what, str)
        if isinstance(what, str) and writes == pause:  # its next move is a query
            print("paused", flush=True)
            sys.stdin.readline()  # until the test says go (the server restarted)

    host = Host(
        Orders(root, hook),
        postgres=url,
        clock=wall,
        on_durable=[hook],
        lease=1.0,
        lock_timeout=120.0,
        max_resumes=99,
    )
    try:
        return asyncio.run(host.work())
    finally:
        host.close()


if __name__ == "__main__":
    if sys.argv[3] == "long":
        print(long_main(sys.argv[1], Path(sys.argv[2])))
    elif sys.argv[3].startswith("pause:"):
        print(main(sys.argv[1], Path(sys.argv[2]), 0, int(sys.argv[3].split(":")[1])))
    else:
        print(main(sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])))
