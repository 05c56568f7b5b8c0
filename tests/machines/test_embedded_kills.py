"""An embedded host on one fsync per step, SIGKILLed at seeded moments.

The host (forked from this process, killed for real) opens its spine, its journal and
`DiskBody(directory, spine=spine)` as docs/embedding.md says, and offers every job
through the key rule: each job's turn calls a replay-safe tool, a tool that is not
replay-safe (it pages someone) and sends an e-mail through a probed effect. The
parent reads the spine lines the host acknowledges (its ``on_durable``), kills it after
a seeded number of them, and starts it again, until a host ends by itself. Then every
e-mail was sent once, every page made at most once, every job ended, and the chain
verifies. ``HZ_KILL_SEED`` reproduces the kill counts; where each kill lands does not
repeat: the host goes on writing until the signal arrives, as far as the scheduler lets it.
So the host's resume limit is above the number of kills (`Settings.max_resumes`): at the
default 3, a loaded machine landed four kills inside one job's turn, which the resume rules
then end abandoned ``max-resumes`` (ADR 0049 statement 16) without its e-mail, as they
should (tests/machines/test_resume.py holds that rule).
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
from pathlib import Path
from typing import Any

from ledger.event import Event
from ledger.spine import Spine, read_events, verify
from machines import DiskBody
from machines.core.context import TurnContext
from machines.core.effects import Effect, Presence, WorldProbe
from machines.core.resume import Pins
from machines.core.runner import Settings
from machines.core.session import Session
from machines.core.steps import Acted
from machines.core.tools import ToolDecl
from machines.crashkit.testing import ManualClock
from machines.keys import Wake
from machines.stores.spine_journal import SpineJournal

SEED = int(os.environ.get("HZ_KILL_SEED", "20261202"))
JOBS = 16
KILLS = 24


def _append(path: Path, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


class PagerSteps:
    """A job: count words (replay-safe), page the on-call (not replay-safe), e-mail."""

    def __init__(self, world: Path) -> None:
        self.world = world

    async def send(self, key: str) -> dict[str, str]:
        _append(self.world / "sent.log", key)
        return {"sent": key}

    async def probe(self, key: str) -> Presence:
        return "present" if key in _lines(self.world / "sent.log") else "absent"

    async def gather(self, ctx: TurnContext) -> Any:
        return {"job": str(ctx.causes[0]["key"]).split("@")[1]}

    async def think(self, ctx: TurnContext, gathered: Any) -> Any:
        job = gathered["job"]

        async def count() -> int:
            return len(job)

        async def page() -> str:
            _append(self.world / "pages.log", job)
            return "paged"

        words = await ctx.tool(ToolDecl("count", True), f"count-{job}", {"job": job}, count)
        paged = await ctx.tool(ToolDecl("page", False), f"page-{job}", {"job": job}, page)
        return {**gathered, "words": words, "paged": paged}

    async def outcome(self, ctx: TurnContext, thought: Any) -> Any:
        return thought

    async def act(self, ctx: TurnContext, decided: Any) -> Acted:
        key = f"host@mail:{decided['job']}"
        await ctx.effect(Effect("mail", key, self.send, WorldProbe(self.probe), "mail.sent"))
        return Acted("drafted")


def host(directory: Path, out: int) -> None:
    """The embedded host's start: every job offered, one turn each, until all ended."""

    def ack(event: Event) -> None:
        os.write(out, f"{event.seq}\n".encode())

    clock = ManualClock()
    settings = Settings(clock=clock, sleep=asyncio.sleep, max_resumes=KILLS)
    with Spine.open(directory / "spine", clock=clock, on_durable=[ack]) as spine:
        journal = SpineJournal.open(spine)
        body = DiskBody(directory / "spine", spine=spine)
        session = Session(journal, body, PagerSteps(directory), settings)
        for job in range(JOBS):
            turn = f"turn-{job}-{len(spine.path.read_bytes())}"
            asyncio.run(session.wake([Wake("asked", f"host@job{job}")], turn=turn, pins=Pins()))
        body.close()
    os.write(out, b"done\n")


def run_once(directory: Path, wanted: int) -> bool:
    """Fork the host, SIGKILL it after ``wanted`` acknowledged lines; True when it ended
    by itself first."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child never returns
        os.close(read)
        try:
            host(directory, write)
            os._exit(0)
        finally:
            os._exit(3)
    os.close(write)
    seen, done = 0, False
    with os.fdopen(read, "rb") as acks:
        for line in acks:
            if line == b"done\n":
                done = True
                break
            seen += 1
            if seen >= wanted:
                os.kill(pid, signal.SIGKILL)
                break
    _, status = os.waitpid(pid, 0)
    if done:
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    return done


def test_an_embedded_host_killed_at_seeded_moments_acts_once(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    kills = 0
    while kills < KILLS and not run_once(tmp_path, rng.randint(1, 12)):
        kills += 1
    while not run_once(tmp_path, 10_000):
        pass
    sent, pages = _lines(tmp_path / "sent.log"), _lines(tmp_path / "pages.log")
    events = list(read_events(tmp_path / "spine"))
    ended = {e.turn for e in events if e.kind == "turn.finished"}
    jobs = {e.key for e in events if e.kind == "turn.started"}
    assert sorted(sent) == sorted(f"host@mail:job{n}" for n in range(JOBS)), f"seed {SEED}"
    assert len(pages) == len(set(pages)) <= JOBS, f"seed {SEED}"
    assert jobs == {f"host@job{n}" for n in range(JOBS)}
    assert ended == {e.turn for e in events if e.kind == "turn.started"}
    abandoned = [e.data for e in events if e.data.get("disposition") == "abandoned"]
    assert not abandoned, f"seed {SEED}: {abandoned}"
    assert verify(tmp_path / "spine").ok
    assert kills >= KILLS // 2, f"the host ended after {kills} kills"
