"""``hz mcp`` answers ``initialize`` and then ``tools/list`` (and the other lists) before
the MCP SDK, the providers or pydantic-ai load (`heinzel.mcp.hello`): a client's startup
wait is spent on Python's start and hz's CLI only, and each answer is the SDK's own, given
once (the lists from ``heinzel/mcp/tools.json``, held equal to the SDK's live answers)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp.server.runner import ServerRunner, _dump_result
from mcp_types import methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from heinzel.mcp.hello import HANDSHAKE_VERSIONS, LISTINGS, initialize_result, listings
from heinzel.mcp.server import build_server
from tests.waits import HANG

from .client import HZ
from .listing import render, sdk_listings

HEAVY = ("mcp", "mcp_types", "pydantic_ai", "openai", "anthropic")


def _initialize(ident: int | str = 1, version: str = "2025-06-18") -> bytes:
    params = {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    }
    return (
        json.dumps(
            {"jsonrpc": "2.0", "id": ident, "method": "initialize", "params": params}
        ).encode()
        + b"\n"
    )


def _start(tmp_path: Path, **extra: str) -> subprocess.Popen[bytes]:
    env = {"HZ_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin", **extra}
    return subprocess.Popen(
        [HZ, "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env=env,
    )


def _reply(process: subprocess.Popen[bytes], line: bytes) -> dict[str, Any]:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(line)
    process.stdin.flush()
    return dict(json.loads(process.stdout.readline() or b"null") or {})


def _refusing(tmp_path: Path) -> Path:
    """A folder whose heavy packages each refuse to import, to put first on the path."""
    refusing = tmp_path / "refusing"
    for name in HEAVY:
        (refusing / name).mkdir(parents=True)
        (refusing / name / "__init__.py").write_text(
            f"raise ImportError('{name} imported before the handshake was answered')\n"
        )
    return refusing


def test_initialize_is_answered_with_no_sdk_and_no_pydantic_ai_imported(tmp_path: Path) -> None:
    """Each heavy package on the path first refuses to import: `hz mcp` still answers
    ``initialize`` (then fails loading the SDK, as the test made it)."""
    process = _start(tmp_path, PYTHONPATH=str(_refusing(tmp_path)))
    try:
        answer = _reply(process, _initialize())
        _, err = process.communicate(timeout=HANG)
    finally:
        process.kill()
        process.communicate(timeout=HANG)
    assert answer.get("id") == 1, err.decode()
    assert answer["result"] == initialize_result("2025-06-18")
    assert b"imported before the handshake was answered" in err  # the SDK loads after


@pytest.mark.parametrize("version", ["2024-11-05", "2025-06-18"])
def test_the_lists_are_answered_with_no_sdk_imported(tmp_path: Path, version: str) -> None:
    """With the heavy packages refusing to import, ``tools/list``, ``prompts/list`` and
    ``resources/list`` after the handshake still get the SDK's answers (from tools.json,
    `test_the_shipped_lists_are_the_sdks` holds it equal); the first tool call then needs
    the SDK, whose failure to load, as the test made it, ends the server."""
    process = _start(tmp_path, PYTHONPATH=str(_refusing(tmp_path)))
    expected = sdk_listings()["listings"]
    results = next(g["results"] for g in expected if version in g["versions"])
    try:
        _reply(process, _initialize(version=version))
        assert process.stdin is not None
        process.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        tools = _reply(process, b'{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}\n')
        prompts = _reply(process, b'{"jsonrpc":"2.0","id":"p","method":"prompts/list"}\n')
        resources = _reply(process, b'{"jsonrpc":"2.0","id":4,"method":"resources/list"}\n')
        call = b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"drafts"}}\n'
        process.stdin.write(call)
        process.stdin.flush()
        _, err = process.communicate(timeout=HANG)
    finally:
        process.kill()
        process.communicate(timeout=HANG)
    assert tools == {"jsonrpc": "2.0", "id": 2, "result": results["tools/list"]}, err.decode()
    assert prompts == {"jsonrpc": "2.0", "id": "p", "result": results["prompts/list"]}
    assert resources == {"jsonrpc": "2.0", "id": 4, "result": results["resources/list"]}
    assert len(tools["result"]["tools"]) == 16
    assert b"imported before the handshake was answered" in err  # loaded for the call


def test_the_shipped_lists_are_the_sdks() -> None:
    """heinzel/mcp/tools.json is exactly what the SDK answers for this server at every
    protocol version, so the early lists can never drift from the tools: after a tool
    changes, `.venv/bin/python -m tests.hz_mcp.listing` writes it again."""
    live = sdk_listings()
    assert LISTINGS.read_text(encoding="utf-8") == render(live), (
        "heinzel/mcp/tools.json differs from the SDK's answers: "
        "run `.venv/bin/python -m tests.hz_mcp.listing`"
    )
    for version in HANDSHAKE_VERSIONS:
        group = next(g for g in live["listings"] if version in g["versions"])
        assert listings(version) == group["results"]


def test_a_list_with_a_cursor_and_a_ping_go_to_the_sdk(tmp_path: Path) -> None:
    """Only a plain list is answered early: a ``ping`` hands the wire to the SDK, which
    answers it and a list asked with a cursor after it; every id is answered once."""
    process = _start(tmp_path)
    try:
        _reply(process, _initialize())
        assert process.stdin is not None
        process.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        ping = _reply(process, b'{"jsonrpc": "2.0", "id": 7, "method": "ping"}\n')
        cursor = b'{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{"cursor":"x"}}\n'
        paged = _reply(process, cursor)
        rest, _ = process.communicate(timeout=HANG)
    finally:
        process.kill()
        process.communicate(timeout=HANG)
    assert ping == {"jsonrpc": "2.0", "id": 7, "result": {}}
    assert paged["id"] == 8 and "tools" in paged.get("result", {}), paged
    assert rest == b""


def test_the_sdk_answers_everything_after_and_initialize_once(tmp_path: Path) -> None:
    """With the SDK there: the early answer, then ``tools/list`` from the SDK, and no
    second answer to ``initialize`` in between."""
    process = _start(tmp_path)
    try:
        first = _reply(process, _initialize("init-1"))
        assert process.stdin is not None
        process.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        listed = _reply(process, b'{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}\n')
        process.communicate(timeout=HANG)  # stdin closed: the server ends
    finally:
        process.kill()
        process.communicate(timeout=HANG)
    assert first["id"] == "init-1" and first["result"]["serverInfo"]["name"] == "hz"
    assert listed["id"] == 2, listed
    assert "heinzel_list" in {tool["name"] for tool in listed["result"]["tools"]}


@pytest.mark.parametrize("version", [*HANDSHAKE_PROTOCOL_VERSIONS, "1999-01-01"])
def test_the_early_answer_is_the_sdks(version: str) -> None:
    """For every version a client may ask (and one the SDK does not know), the answer
    `heinzel.mcp.hello` gives is the one the SDK builds for this server."""
    assert HANDSHAKE_VERSIONS == HANDSHAKE_PROTOCOL_VERSIONS
    low = build_server(None)._lowlevel_server
    runner: Any = ServerRunner(server=low, connection=None, lifespan_state=None)  # type: ignore[arg-type]
    params = {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    }
    result = _dump_result(runner._handle_initialize(params))
    sdk = methods.serialize_server_result("initialize", result["protocolVersion"], result)
    assert initialize_result(version) == sdk
