"""``hz mcp`` from the real Claude Code CLI: configured with ``--mcp-config``, driven by the
fake Messages API on loopback (tests/runners/fake_anthropic.py) that scripts the tool calls.

The binary is the one `make test` installs into .venv/claude (or ``HZ_TEST_CLAUDE``); it talks
only to 127.0.0.1 with a dummy key in a fresh HOME. ``MCP_CONNECTION_NONBLOCKING=false`` makes
``claude -p`` wait for the MCP server before its first request (otherwise the first tool call
can land while ``hz`` is still connecting), and the test waits on that readiness rather than on
a clock: ``hz mcp`` is started and answers ``initialize`` once before claude runs (a warm
start: its modules read and compiled, as a person's second start is), Claude Code's own waits
(``MCP_TIMEOUT``, ``MCP_CONNECT_TIMEOUT_MS``) are raised to ceilings that only catch a hang,
and the session's ``init`` message must report the server ``connected`` before any request
is looked at.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.waits import HANG, HANG_MS

from .client import HZ, ROOT, priya


def _fake_api() -> ModuleType:
    path = ROOT / "tests" / "runners" / "fake_anthropic.py"
    spec = importlib.util.spec_from_file_location("hz_mcp_tests_fake_anthropic", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _claude() -> str:
    path = Path(os.environ.get("HZ_TEST_CLAUDE", ROOT / ".venv/claude/node_modules/.bin/claude"))
    if not path.exists():
        pytest.skip(f"the real Claude Code is not installed at {path}: `make claude` installs it")
    return str(path)


def _tool_results(requests: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every tool_result block the fake API received, by tool_use id."""
    found: dict[str, dict[str, Any]] = {}
    for body in requests:
        for message in body["messages"]:
            content = message.get("content")
            if isinstance(content, list):
                for block in content:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        found[block["tool_use_id"]] = block
    return found


def _text(block: dict[str, Any]) -> str:
    content = block["content"]
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content)


def _warm(server: dict[str, Any], cwd: Path) -> None:
    """Start ``hz mcp`` as the config says and wait for its answer to ``initialize``, then
    close it: what claude starts next reads modules already read and compiled."""
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "warm", "version": "0"},
        },
    }
    with subprocess.Popen(
        [server["command"], *server["args"]],
        env={"PATH": "/usr/bin:/bin", **server["env"]},
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as process:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps(hello) + "\n")
        process.stdin.flush()
        answer = json.loads(process.stdout.readline())  # blocks until hz mcp is ready
        process.stdin.close()
        process.wait(timeout=HANG)  # a ceiling that only catches a hang
    assert answer["id"] == 1 and "result" in answer, answer


def test_claude_code_lists_and_shows_through_hz_mcp(tmp_path: Path) -> None:
    """The real claude, told by the API to call heinzel_list, heinzel_show and a show of an
    unknown name, runs them through `hz mcp`; hz's answers (the id only the home holds, the
    coded error) come back in the next requests to the API."""
    claude = _claude()
    fake = _fake_api()
    work = tmp_path / "work"
    work.mkdir()
    env = priya(work)
    setup = (["heinzel", "new", "--from", "weekly-report.prose.md"], ["approve", "weekly-report"])
    for args in setup:
        subprocess.run([HZ, *args], env=env, cwd=work, check=True, capture_output=True)
    listed = subprocess.run(
        [HZ, "heinzel", "list", "--json"], env=env, cwd=work, check=True, capture_output=True
    )
    heinzel_id = json.loads(listed.stdout)[0]["id"]
    config = tmp_path / "mcp.json"
    server = {"command": HZ, "args": ["mcp"], "env": {k: env[k] for k in ("HZ_HOME", "HZ_NOW")}}
    _warm(server, work)
    config.write_text(json.dumps({"mcpServers": {"hz": server}}))

    calls = [
        ("mcp__hz__heinzel_list", {}),
        ("mcp__hz__heinzel_show", {"name": "weekly-report"}),
        ("mcp__hz__heinzel_show", {"name": "nobody"}),
    ]

    def script(tool_results: int) -> tuple[list[dict[str, Any]], str]:
        if tool_results < len(calls):
            return [fake.tool_use(tool_results + 1, *calls[tool_results])], "tool_use"
        return [fake.text("You have one: weekly-report.")], "end_turn"

    user_home = tmp_path / "user"
    user_home.mkdir()
    with fake.Server(script) as api:
        done = subprocess.run(
            [
                claude,
                "-p",
                "--output-format=stream-json",
                "--verbose",
                "--model=claude-sonnet-4-5",
                f"--mcp-config={config}",
                "--strict-mcp-config",
                "--permission-mode=dontAsk",
                "--allowedTools=mcp__hz__heinzel_list,mcp__hz__heinzel_show",
                "--max-turns=6",
            ],
            input="Which Heinzelmännchen do I have, and what is weekly-report doing?",
            env={
                "PATH": "/usr/bin:/bin",
                "HOME": str(user_home),
                "ANTHROPIC_BASE_URL": api.url,
                "ANTHROPIC_API_KEY": "sk-ant-dummy-not-a-key",
                "CLAUDE_CODE_MAX_RETRIES": "1",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "MCP_CONNECTION_NONBLOCKING": "false",
                # Claude Code gives a server 30 s to start (MCP_TIMEOUT) and, with a
                # blocking connection, waits at most MCP_CONNECT_TIMEOUT_MS (5 s by default)
                # for it to answer `initialize`: on a loaded machine `hz mcp` took 6.6 to
                # 9.3 s, and claude went on without hz's tools. Both are ceilings here
                # (10 minutes), so the wait ends when the server is ready, not on a clock.
                "MCP_TIMEOUT": str(HANG_MS),
                "MCP_CONNECT_TIMEOUT_MS": str(HANG_MS),
            },
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=2 * HANG,
        )
        requests = api.state.message_requests()
    assert done.returncode == 0, done.stderr[-2000:]
    messages = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    init = next(m for m in messages if m.get("subtype") == "init")
    assert {"name": "hz", "status": "connected"}.items() <= init["mcp_servers"][0].items()
    assert messages[-1]["result"] == "You have one: weekly-report."
    offered = {tool["name"] for tool in requests[0]["tools"]}
    assert {"mcp__hz__heinzel_list", "mcp__hz__heinzel_show", "mcp__hz__approve"} <= offered
    results = _tool_results(requests)
    listing, shown, unknown = (results[fake.tool_use(n, "x", {})["id"]] for n in (1, 2, 3))
    assert not listing.get("is_error")
    rows = json.loads(_text(listing))["heinzelmaennchen"]
    assert [(r["id"], r["state"]) for r in rows] == [(heinzel_id, "asleep")]
    assert not shown.get("is_error")
    assert json.loads(_text(shown))["contract_version"] == 1
    assert unknown.get("is_error") is True
    assert "HZH080: no Heinzelmännchen named 'nobody'" in _text(unknown)


def test_claude_code_with_its_default_waits_offers_hz_tools(tmp_path: Path) -> None:
    """Claude Code as a person runs it: no MCP setting at all, ``hz mcp`` started cold by
    claude itself. Headless ``claude -p`` connects MCP servers in the background and waits
    for them at most 2 s (its own constant) before its first request; a server whose
    ``initialize`` and ``tools/list`` are not answered by then is left out of that request.
    `hz mcp` answers both before the SDK loads (`heinzel.mcp.hello`), so hz's tools are in
    the first request claude sends (it failed 2 of 2 loaded runs when `tools/list` waited
    for the SDK). The fake API answers in words at once; no tool runs."""
    claude = _claude()
    fake = _fake_api()
    work = tmp_path / "work"
    work.mkdir()
    env = priya(work)
    config = tmp_path / "mcp.json"
    server = {"command": HZ, "args": ["mcp"], "env": {k: env[k] for k in ("HZ_HOME", "HZ_NOW")}}
    config.write_text(json.dumps({"mcpServers": {"hz": server}}))
    user_home = tmp_path / "user"
    user_home.mkdir()
    with fake.Server(lambda _results: ([fake.text("Nothing to do.")], "end_turn")) as api:
        done = subprocess.run(
            [
                claude,
                "-p",
                "--output-format=stream-json",
                "--verbose",
                "--model=claude-sonnet-4-5",
                f"--mcp-config={config}",
                "--strict-mcp-config",
                "--max-turns=2",
            ],
            input="Which Heinzelmännchen do I have?",
            env={
                "PATH": "/usr/bin:/bin",
                "HOME": str(user_home),
                "ANTHROPIC_BASE_URL": api.url,
                "ANTHROPIC_API_KEY": "sk-ant-dummy-not-a-key",
                "CLAUDE_CODE_MAX_RETRIES": "1",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            },
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=2 * HANG,
        )
        requests = api.state.message_requests()
    assert done.returncode == 0, done.stderr[-2000:]
    messages = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    init = next(m for m in messages if m.get("subtype") == "init")
    assert {"name": "hz", "status": "connected"}.items() <= init["mcp_servers"][0].items()
    offered = {tool["name"] for tool in requests[0]["tools"]}
    listed = {f"mcp__hz__{name}" for name in ("heinzel_list", "heinzel_show", "drafts", "approve")}
    assert listed <= offered, sorted(offered)
