"""``hz mcp`` answers ``initialize`` before the MCP SDK, the providers or pydantic-ai load
(`heinzel.mcp.hello`): a client's startup wait is spent on Python's start and hz's CLI
only, and the answer is the SDK's own, given once."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp.server.runner import ServerRunner, _dump_result
from mcp_types import methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from heinzel.mcp.hello import HANDSHAKE_VERSIONS, initialize_result
from heinzel.mcp.server import build_server
from tests.waits import HANG

from .client import HZ

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


def test_initialize_is_answered_with_no_sdk_and_no_pydantic_ai_imported(tmp_path: Path) -> None:
    """Each heavy package on the path first refuses to import: `hz mcp` still answers
    ``initialize`` (then fails loading the SDK, as the test made it)."""
    refusing = tmp_path / "refusing"
    for name in HEAVY:
        (refusing / name).mkdir(parents=True)
        (refusing / name / "__init__.py").write_text(
            f"raise ImportError('{name} imported before initialize was answered')\n"
        )
    process = _start(tmp_path, PYTHONPATH=str(refusing))
    try:
        answer = _reply(process, _initialize())
        _, err = process.communicate(timeout=HANG)
    finally:
        process.kill()
        process.communicate(timeout=HANG)
    assert answer.get("id") == 1, err.decode()
    assert answer["result"] == initialize_result("2025-06-18")
    assert b"imported before initialize was answered" in err  # the SDK loads after, not before


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
