"""The MCP ``heinzel_list`` round trip against ``hz heinzel list --json`` over the same home.

Two figures: a call on a server already running (what an agent pays per call), beside the
whole `hz heinzel list --json` process; and a cold session (start ``hz mcp``, initialize, one
call, close) beside the same command. Homes of 10 and 1,000 Heinzelmännchen.

Then the time from starting ``hz mcp`` to its answer to ``initialize`` (what Claude Code
waits for, at most ``MCP_CONNECT_TIMEOUT_MS``, 5 s by default) and to its answer to the
``tools/list`` that follows, beside the SDK's own one-tool server started the same way,
interleaved: the ratio says what hz adds to the SDK. Target: under a second on an idle
machine. ``bench_mcp.py --start`` times only that, in `START_ROUNDS` rounds.
"""

from __future__ import annotations

import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

HERE = Path(__file__).resolve().parent
HZ = str(Path(sys.executable).with_name("hz"))
ROUNDS = 7
START_ROUNDS = 5


def _populate() -> Any:
    spec = importlib.util.spec_from_file_location(
        "bench_heinzel_for_mcp", HERE / "bench_heinzel.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.populate


def _cli(home: Path) -> float:
    start = time.perf_counter()
    subprocess.run(
        [HZ, "heinzel", "list", "--json", "--home", str(home)], check=True, capture_output=True
    )
    return time.perf_counter() - start


ONE_TOOL = """
from mcp.server.mcpserver import MCPServer
server = MCPServer("one")
@server.tool()
def echo(text: str) -> str:
    return text
server.run("stdio")
"""


async def _initialize(command: str, args: list[str]) -> tuple[float, float]:
    """Seconds from starting the server to its answer to ``initialize``, and to its answer
    to the ``tools/list`` sent next."""
    params = StdioServerParameters(command=command, args=args)
    start = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        hello = time.perf_counter() - start
        await session.list_tools()
        return hello, time.perf_counter() - start


async def _mcp(home: Path, count: int) -> tuple[list[float], float]:
    params = StdioServerParameters(command=HZ, args=["mcp", "--home", str(home)])
    start = time.perf_counter()
    warm: list[float] = []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for _ in range(ROUNDS):
            begin = time.perf_counter()
            result = await session.call_tool("heinzel_list", {})
            warm.append(time.perf_counter() - begin)
            assert not result.is_error
            assert len(result.structured_content["heinzelmaennchen"]) == count
            if len(warm) == 1:
                cold = time.perf_counter() - start
    return warm, cold


def _start() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        hz_times, sdk_times = [], []
        for _ in range(START_ROUNDS):
            hz_times.append(anyio.run(_initialize, HZ, ["mcp", "--home", tmp]))
            sdk_times.append(anyio.run(_initialize, sys.executable, ["-c", ONE_TOOL]))
        for n, what in enumerate(("initialize", "tools/list")):
            hz_ms = statistics.median(t[n] for t in hz_times) * 1e3
            sdk_ms = statistics.median(t[n] for t in sdk_times) * 1e3
            print(
                f"hz mcp start to {what} answered: {hz_ms:7.1f} ms; the SDK's one-tool server"
                f" {sdk_ms:7.1f} ms (ratio {hz_ms / sdk_ms:.2f}; medians of {START_ROUNDS})"
            )
            verdict = "PASS" if hz_ms < 1000 else "MISS"
            print(f"{verdict} hz mcp start to {what} answered: {hz_ms:.1f} ms (target < 1000 ms)")


def main() -> None:
    if "--start" in sys.argv[1:]:
        _start()
        return
    populate = _populate()
    for count in (10, 1000):
        with tempfile.TemporaryDirectory() as tmp:
            home = Path(tmp)
            populate(home, count)
            cli = statistics.median(_cli(home) for _ in range(ROUNDS))
            colds, warms = [], []
            for _ in range(3):
                warm, cold = anyio.run(_mcp, home, count)
                colds.append(cold)
                warms.extend(warm[1:])
            warm_ms, cold_ms = statistics.median(warms) * 1e3, statistics.median(colds) * 1e3
            print(
                f"heinzel_list over MCP, {count:>5} rows: {warm_ms:7.1f} ms per call on a running"
                f" server, {cold_ms:7.1f} ms cold (start, initialize, call); baseline"
                f" `hz heinzel list --json` {cli * 1e3:7.1f} ms"
                f" (ratio warm {warm_ms / (cli * 1e3):.2f}, cold {cold_ms / (cli * 1e3):.2f})"
            )
    _start()


if __name__ == "__main__":
    main()
