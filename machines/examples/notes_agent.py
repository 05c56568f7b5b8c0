"""A second host that is not hz: a notes runner driving a Pydantic AI agent loop.

It owns its words (a `Vocabulary`: a turn ends ``noted``, a ``request`` wakes it),
keeps its turns on disk (a `ledger.Spine` with `SpineJournal.open`, a `DiskBody`
in the same directory) and mints turn ids with `new_turn_id`. The think step runs
a Pydantic AI agent whose model is a `FunctionModel` (no network): every model
reply goes through ``ctx.model`` (journalled, replayed after a crash), the
``count_words`` tool through ``ctx.tool`` (replay-safe), and the ``write_note``
tool through ``ctx.effect``: a real, fsynced line in a notes file, probed by its
key, so a crash anywhere writes each note exactly once.
``tests/machines/test_notes_agent.py`` runs the crash matrix over `scenario`.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ledger.spine import Spine
from machines import (
    Acted,
    DiskBody,
    Effect,
    ModelReply,
    Pins,
    Presence,
    Settings,
    SpineJournal,
    Steer,
    ToolDecl,
    TurnContext,
    TurnState,
    Vocabulary,
    Wake,
    WorldProbe,
    new_turn_id,
    start_turn,
)

NOTES = Vocabulary("notes", 1, dispositions=("noted",), causes=("request",))
"""This host's words, frozen: its lists only grow."""

COUNT = ToolDecl("count_words", replay_safe=True)
WRITE = ToolDecl("write_note", replay_safe=True)
"""Replay-safe although it writes: its write is an effect, so running the call again
after a crash performs it at most once (the effect ledger probes by key)."""


class Notebook:
    """The runner's world: a notes file, one fsynced line per note, led by its key."""

    def __init__(self, path: Path, after_write: Callable[[], None] | None = None) -> None:
        self.path = path
        self.after_write = after_write

    async def write(self, key: str, text: str) -> dict[str, str]:
        """Append the note durably."""
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{key} {text}\n".encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        if self.after_write is not None:
            self.after_write()
        return {"written": key}

    async def probe(self, key: str) -> Presence:
        """Present when a line of the file is led by ``key``."""
        if not self.path.exists():
            return "absent"
        lines = self.path.read_text(encoding="utf-8").splitlines()
        return "present" if any(line.split(" ", 1)[0] == key for line in lines) else "absent"


def script(messages: list[ModelMessage]) -> dict[str, Any]:
    """The scripted model: count the words, write the note, then say done."""
    returns = [
        p for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)
    ]
    if not returns:
        return {"tool": "count_words", "args": {}, "id": "c1"}
    if len(returns) == 1:
        return {"tool": "write_note", "args": {"words": returns[0].content}, "id": "c2"}
    return {"text": "noted"}


class NoteSteps:
    """gather -> think (the agent loop) -> outcome -> act, for one note request."""

    def __init__(self, requests: dict[str, str], notebook: Notebook) -> None:
        self.requests = requests
        self.notebook = notebook

    async def gather(self, ctx: TurnContext) -> Any:
        request = str(ctx.causes[0]["key"]).rsplit(":", 1)[1]
        return {"request": request, "text": self.requests[request]}

    async def think(self, ctx: TurnContext, gathered: Any) -> Any:
        async def model(messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
            async def ask(_steers: list[Steer]) -> ModelReply:
                return ModelReply(script(messages), usd=0.01, tokens=10)

            reply = await ctx.model(ask)
            if "text" in reply:
                return ModelResponse(parts=[TextPart(reply["text"])])
            call = ToolCallPart(reply["tool"], reply["args"], tool_call_id=reply["id"])
            return ModelResponse(parts=[call])

        agent = Agent(FunctionModel(model))

        @agent.tool_plain
        async def count_words() -> int:
            """Count the words of the request."""

            async def count() -> int:
                return len(gathered["text"].split())

            return int(await ctx.tool(COUNT, "c1", {}, count))

        @agent.tool_plain
        async def write_note(words: int) -> str:
            """Write the note to the notes file (once per request)."""
            key = f"notes@note:{gathered['request']}"
            text = f"{gathered['text']} ({words} words)"

            async def perform(k: str) -> dict[str, str]:
                return await self.notebook.write(k, text)

            async def effect() -> str:
                note = Effect(
                    "write_note", key, perform, WorldProbe(self.notebook.probe), "note.written"
                )
                return await ctx.effect(note)

            return str(await ctx.tool(WRITE, "c2", {"words": words}, effect))

        result = await agent.run(gathered["text"])
        return {**gathered, "answer": result.output}

    async def outcome(self, ctx: TurnContext, thought: Any) -> Any:
        return thought

    async def act(self, ctx: TurnContext, decided: Any) -> Acted:
        return Acted("noted", {"request": decided["request"]})


async def run(
    directory: Path, requests: dict[str, str], *, clock: Callable[[], datetime]
) -> dict[str, Any]:
    """Run one turn per request over the spine in ``directory``; what happened."""
    settings = Settings(clock=clock, sleep=asyncio.sleep, vocabulary=NOTES)
    notebook = Notebook(directory / "notes.txt")
    steps = NoteSteps(requests, notebook)
    states: dict[str, str] = {}
    with Spine.open(directory, clock=clock) as spine:
        journal = SpineJournal.open(spine)
        body = DiskBody(directory)
        for request in requests:
            wake = Wake("request", f"notes@request:{request}", NOTES)
            turn = new_turn_id(clock)
            state = await start_turn(
                journal, body, steps, settings, turn=turn, wakes=[wake], pins=Pins()
            )
            states[request] = f"{state.state} {state.disposition}"
    return {"states": states, "notes": notebook.path.read_text(encoding="utf-8").splitlines()}


async def scenario(rig: Any) -> TurnState:
    """The crash matrix's scenario (`machines.crashmatrix`): one note request."""
    notebook = Notebook(rig.world.path, after_write=rig.world.wrote)
    steps = NoteSteps({"r1": "buy milk and bread"}, notebook)
    wake = Wake("request", "notes@request:r1", NOTES)
    settings = replace(rig.settings, vocabulary=NOTES)
    state: TurnState = await rig.run(
        rig.journal(), steps, turn="t1", wakes=[wake], pins=Pins(), settings=settings
    )
    return state


if __name__ == "__main__":
    now = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
    with tempfile.TemporaryDirectory() as scratch:
        where = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(scratch)
        print(asyncio.run(run(where, {"r1": "buy milk", "r2": "call the bank"}, clock=lambda: now)))
