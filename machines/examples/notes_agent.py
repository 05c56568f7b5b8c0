"""A second host that is not hz: a notes runner driving a Pydantic AI agent loop.

It owns its words (a `Vocabulary`: a turn ends ``noted``, a ``request`` wakes it) and
keeps its turns on disk (`Host` with a directory: a spine and its bodies). Its steps
are typed (`TypedSteps`, Pydantic models). The think step runs a Pydantic AI agent whose
model is a `FunctionModel` (no network): every model reply goes through ``ctx.model``
(journalled, replayed after a crash), the ``count_words`` tool is a ``@tool``
(replay-safe), and ``write_note`` a ``@tool`` whose work is an ``@effect``: a real,
fsynced line in a notes file, probed by its key, so a crash anywhere writes each note
exactly once.
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

from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from machines import (
    Acted,
    Host,
    ModelReply,
    Pins,
    Steer,
    TurnContext,
    TurnState,
    TypedSteps,
    Vocabulary,
    Wake,
    effect,
    tool,
)

NOTES = Vocabulary("notes", 1, dispositions=("noted",), causes=("request",))
"""This host's words, frozen: its lists only grow."""


class Request(BaseModel):
    request: str
    text: str


class Noted(Request):
    answer: str


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


class NoteSteps(TypedSteps):
    """gather -> think (the agent loop) -> act, for one note request; its world: a
    notes file, one fsynced line per note, led by its key."""

    def __init__(
        self, requests: dict[str, str], notes: Path, after_write: Callable[[], None] = print
    ) -> None:
        self.requests = requests
        self.notes = notes
        self.after_write = after_write

    def noted(self, key: str) -> bool:
        """Whether a line of the notes file is led by ``key`` (the effect's probe)."""
        lines = self.notes.read_text(encoding="utf-8").splitlines() if self.notes.exists() else []
        return any(line.split(" ", 1)[0] == key for line in lines)

    @effect(probe=noted, event="note.written")
    async def write(self, key: str, text: str) -> dict[str, str]:
        """Append the note durably."""
        fd = os.open(self.notes, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{key} {text}\n".encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        self.after_write()
        return {"written": key}

    @tool(replay_safe=True)
    async def count_words(self, text: str) -> int:
        return len(text.split())

    @tool(replay_safe=True)
    async def write_note(self, request: str, text: str) -> str:
        """Replay-safe although it writes: its write is an effect, so running the call
        again after a crash performs it at most once (the effect ledger probes by key)."""
        return await self.write(f"notes@note:{request}", text)

    async def gather(self, ctx: TurnContext) -> Request:
        request = ctx.key.rsplit(":", 1)[1]
        return Request(request=request, text=self.requests[request])

    async def think(self, ctx: TurnContext, asked: Request) -> Noted:
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
            return await self.count_words(asked.text)

        @agent.tool_plain
        async def write_note(words: int) -> str:
            """Write the note to the notes file (once per request)."""
            return await self.write_note(asked.request, f"{asked.text} ({words} words)")

        result = await agent.run(asked.text)
        return Noted(**asked.model_dump(), answer=result.output)

    async def act(self, ctx: TurnContext, noted: Noted) -> Acted:
        return Acted("noted", {"request": noted.request})


async def run(
    directory: Path, requests: dict[str, str], *, clock: Callable[[], datetime]
) -> dict[str, Any]:
    """Run one turn per request over the spine in ``directory``; what happened."""
    steps = NoteSteps(requests, directory / "notes.txt", after_write=lambda: None)
    states: dict[str, str] = {}
    with Host(steps, directory, clock=clock, vocabulary=NOTES) as host:
        for request in requests:
            state = await host.run(f"notes@request:{request}")
            states[request] = f"{state.state} {state.disposition}" if state else "none"
    return {"states": states, "notes": steps.notes.read_text(encoding="utf-8").splitlines()}


async def scenario(rig: Any) -> TurnState:
    """The crash matrix's scenario (`machines.crashkit.matrix`): one note request."""
    steps = NoteSteps({"r1": "buy milk and bread"}, rig.world.path, after_write=rig.world.wrote)
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
