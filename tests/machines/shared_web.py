"""The held-out host's steps behind a web server, for ``uvicorn --workers 2``: each worker
imports this module and makes its own ``Host(..., shared=True)`` over one directory
(``HZ_WEB_ROOT``); ``POST /orders/{order}`` runs that order's job.

Each worker takes the next seeded kill point from ``kills.json`` (under a lock, so two
workers never take the same one) and SIGKILLs itself at that point: a spine append made
durable, or a write to its world; ``kills.log`` counts the kills."""

from __future__ import annotations

import fcntl
import json
import os
import signal
from datetime import UTC, datetime
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from machines import Host
from tests.machines.heldout_host import Shop

ROOT = Path(os.environ["HZ_WEB_ROOT"])


def _take_point() -> int:
    """The next kill point of ``kills.json`` (0 when none is left), taken under a lock."""
    with (ROOT / "kills.json").open("r+") as points:
        fcntl.flock(points, fcntl.LOCK_EX)
        left = json.load(points)
        points.seek(0)
        points.truncate()
        json.dump(left[1:], points)
    return int(left[0]) if left else 0


AT, seen = _take_point(), 0


def hook(_what: object) -> None:
    global seen
    seen += 1
    if seen == AT:  # a real SIGKILL: no cleanup, no flush, nothing after
        with (ROOT / "kills.log").open("a") as log:
            log.write(f"{os.getpid()}\n")
        os.kill(os.getpid(), signal.SIGKILL)


host = Host(
    Shop(ROOT, hook),
    ROOT / "spine",
    clock=lambda: datetime(2026, 12, 1, 9, 0, tzinfo=UTC),
    on_durable=[hook],
    max_resumes=99,
    shared=True,
    concurrency=4,
    lock_timeout=300,
)


async def order(request: Request) -> JSONResponse:
    state = await host.run(f"shop@order:{request.path_params['order']}")
    assert state is not None
    return JSONResponse({"state": state.state, "disposition": state.disposition})


app = Starlette(routes=[Route("/orders/{order}", order, methods=["POST"])])
