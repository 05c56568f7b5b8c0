"""What a crash-matrix scenario gets in each of its processes: a `Rig` (a spine, a body, a
`FileWorld`, spend and tool records, all files in the run's directory) (`machines.crashkit.matrix`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Coroutine, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ledger.event import parse_ts
from ledger.files import open_append
from ledger.spine import Spine
from machines.core.effects import Presence
from machines.core.fold import TurnState, fold
from machines.core.resume import Pins, resume_turn, start_turn
from machines.core.runner import Settings
from machines.core.steps import Steps
from machines.crashkit.crash import CRASH_EXIT, crash_hook
from machines.keys import Wake, coalesce
from machines.stores.disk_body import DiskBody
from machines.stores.journal import Journal
from machines.stores.spine_journal import SpineIndex, SpineJournal

__all__ = ["WORLD_CRASH", "FileWorld", "Rig", "Scenario", "append_line", "lines_of"]

WORLD_CRASH = "HZ_MATRIX_WORLD_CRASH"


def append_line(path: Path, line: str) -> None:
    """Append one line to ``path`` and fsync it."""
    fd = open_append(path)
    try:
        os.write(fd, (line + "\n").encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)


def lines_of(path: Path) -> list[str]:
    """The lines of ``path`` (none when it does not exist)."""
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


class FileWorld:
    """A fake world kept in a file: one line per effect performed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.crash_at = int(os.environ.get(WORLD_CRASH, "0") or 0)
        self.writes = 0

    async def perform(self, key: str) -> dict[str, str]:
        """Write the effect (durably), then die here if this write is the crash point."""
        append_line(self.path, key)
        self.wrote()
        return {"placed": key}

    def wrote(self) -> None:
        """Count one durable write of the world; die if it is the crash point (a host's
        own world calls this after each of its writes to ``path``)."""
        self.writes += 1
        if self.writes == self.crash_at:
            os._exit(CRASH_EXIT)

    async def probe(self, key: str) -> Presence:
        """Present when the key was written."""
        return "present" if self.has(key) else "absent"

    def has(self, key: str) -> bool:
        """The same question as a local record answers it."""
        return key in lines_of(self.path)


class Rig:
    """What a scenario gets in its process: a spine, a body, a world, spend and tools."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        now = os.environ.get("HZ_NOW")
        moment = parse_ts(now) if now else datetime(2026, 10, 30, 15, 0, tzinfo=UTC)
        self.clock = lambda: moment
        self.body = DiskBody(workdir / "spine")
        self.world = FileWorld(workdir / "world.log")
        self.settings = Settings(clock=self.clock, sleep=_no_sleep)
        self._spine: Spine | None = None

    def journal(self) -> SpineJournal:
        """The spine in ``workdir/spine``, with the crash hook installed; the rig's body
        shares its fsyncs from then on (``DiskBody(..., spine=spine)``: one fsync per
        step, as docs/embedding.md tells a host to open them)."""
        spine = Spine.open(self.workdir / "spine", clock=self.clock, on_durable=[crash_hook()])
        self._spine = spine
        self.body = DiskBody(self.workdir / "spine", spine=spine)
        return SpineJournal(spine, SpineIndex.scan(spine.path))

    def charge(self, usd: float) -> None:
        """Record a model request's cost in the spend file."""
        append_line(self.workdir / "spend.log", f"{usd}")

    def tool_ran(self, name: str) -> None:
        """Record a tool run in the tools file."""
        append_line(self.workdir / "tools.log", name)

    async def run(
        self,
        journal: Journal,
        steps: Steps,
        *,
        turn: str,
        wakes: Sequence[Wake],
        pins: Pins,
        settings: Settings | None = None,
    ) -> TurnState:
        """Start the turn, or resume it, or leave it, as the key rule says
        (``settings``: the host's, e.g. with its vocabulary; the rig's by default)."""
        settings = settings or self.settings
        plan = coalesce(journal, wakes)
        if plan.resume:
            return await resume_turn(journal, self.body, steps, settings, turn=plan.resume[0])
        if plan.start:
            return await start_turn(
                journal, self.body, steps, settings, turn=turn, wakes=plan.start, pins=pins
            )
        return fold(turn, journal.turn_events(turn), settings.vocabulary)


async def _no_sleep(_seconds: float) -> None:
    """The rig never waits between retries."""


Scenario = Callable[[Rig], Coroutine[Any, Any, TurnState | None]]
