"""hz's side of the jobs-per-second figure (``jobs.py``): the queue of a `Host` on the
Postgres journal. ``enqueue URL J``: queue J jobs; ``work URL``: claim and run due jobs
until none is left undone (`Host.work`). A job is a turn of 5 replay-safe tool calls
(gather) and one effect (act)."""

from __future__ import annotations

import asyncio
import sys
from datetime import UTC, datetime

from machines import Acted, Host, TurnContext, TypedSteps, effect, tool


class Job(TypedSteps):
    @tool(replay_safe=True)
    async def call(self, i: int) -> int:
        return i

    @effect(probe=None, event="job.done")
    async def finish(self, key: str) -> None:
        return None

    async def gather(self, ctx: TurnContext) -> int:
        return sum([await self.call(i) for i in range(5)])

    async def act(self, ctx: TurnContext, total: int) -> Acted:
        await self.finish(f"peer@done:{ctx.key}")
        return Acted("done")


def main() -> None:
    mode, url = sys.argv[1], sys.argv[2]
    with Host(Job(), postgres=url, clock=lambda: datetime.now(UTC)) as host:
        if mode == "enqueue":
            for j in range(int(sys.argv[3])):
                host.enqueue(f"peer@job:{j}")
        else:
            print(asyncio.run(host.work()))


if __name__ == "__main__":
    main()
