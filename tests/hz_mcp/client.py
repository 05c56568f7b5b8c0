"""The MCP SDK's own client driving the real ``hz mcp`` executable over stdio, as a user's
agent would: one server process per `session`, calls made in order."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = Path(__file__).resolve().parents[2]
HZ = str(Path(sys.executable).parent / "hz")
NOW = "2026-10-30T14:05:00Z"


def priya(tmp_path: Path) -> dict[str, str]:
    """The worked example's files copied to ``tmp_path``; the environment ``hz mcp`` needs."""
    shutil.copytree(ROOT / "fixtures" / "priya", tmp_path, dirs_exist_ok=True)
    return {
        "HZ_HOME": str(tmp_path / "home"),
        "HZ_FIXTURE_SOURCES": str(tmp_path),
        "HZ_NOW": NOW,
        "HZ_TESTING": "1",
        "PATH": "/usr/bin:/bin",
    }


def session(
    env: dict[str, str],
    cwd: Path,
    body: Callable[[ClientSession], Awaitable[Any]],
    args: Sequence[str] = ("mcp",),
) -> Any:
    """Start ``hz ARGS`` (``hz mcp``) with ``env`` in ``cwd``, initialize, run ``body``,
    close."""

    async def run() -> Any:
        params = StdioServerParameters(command=HZ, args=list(args), env=env, cwd=str(cwd))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            return await body(s)

    return anyio.run(run)


def text(result: Any) -> str:
    """The text of a tool result's content blocks."""
    return "\n".join(block.text for block in result.content if block.type == "text")
