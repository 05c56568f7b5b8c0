"""``hz mcp`` answers every frame: a string that is not Unicode text is a coded tool error
(HZH347), a frame that is not JSON a JSON-RPC parse error (-32700), never silence.

The SDK's client can't send a lone surrogate (it fails to serialise one), but other clients
do (a JSON ``"\\ud800"`` escape is valid JSON text), so these tests write raw frames to the
real ``hz mcp`` and read its answers with the SDK's own message types. Each batch ends with
a good call (the sentinel): its answer arriving proves the server went on, and every
refused frame must have been answered before it, so a dropped one fails the test instead
of hanging it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp import ClientSession

from .client import HZ, priya, session, text

INIT = (
    b'{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":'
    b'"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}'
)
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
SENTINEL = (
    b'{"jsonrpc":"2.0","id":"last","method":"tools/call",'
    b'"params":{"name":"heinzel_list","arguments":{}}}'
)


def call(ident: int, tool: str, arguments: bytes) -> bytes:
    """A raw ``tools/call`` frame with ``arguments`` as written (JSON bytes)."""
    head = f'{{"jsonrpc":"2.0","id":{ident},"method":"tools/call","params":{{"name":"{tool}",'
    return head.encode() + b'"arguments":' + arguments + b"}}"


def exchange(tmp_path: Path, frames: list[bytes], served: frozenset[int] = frozenset()) -> Any:
    """Write the handshake, ``frames`` and the sentinel to a real ``hz mcp``; read every
    answer up to the sentinel's (and those of the calls in ``served``, which run beside
    it), each checked as a JSON-RPC message by the SDK's types; return them by id (``None``
    for the answers without one, as a list)."""
    proc = subprocess.Popen(
        [HZ, "mcp"],
        env=priya(tmp_path),
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    answers: dict[Any, Any] = {None: []}
    with proc:
        proc.stdin.write(b"\n".join([INIT, INITIALIZED, *frames, SENTINEL]) + b"\n")
        proc.stdin.flush()
        while not {"last", *served} <= answers.keys():
            line = proc.stdout.readline()
            assert line, f"hz mcp ended before answering: {proc.stderr.read().decode()[-2000:]}"
            message = types.jsonrpc_message_adapter.validate_json(line)
            ident = getattr(message, "id", None)
            if ident is None:
                answers[None].append(message)
            else:
                assert ident not in answers, f"answered twice: {ident}"
                answers[ident] = message
        _, err = proc.communicate(timeout=60)
    assert b"Traceback" not in err
    assert isinstance(answers["last"], types.JSONRPCResponse)
    assert types.CallToolResult.model_validate(answers["last"].result).is_error is False
    return answers


def tool_error(answer: Any) -> str:
    """The text of a tool error result (and that it is one)."""
    assert isinstance(answer, types.JSONRPCResponse), answer
    result = types.CallToolResult.model_validate(answer.result)
    assert result.is_error
    return text(result)


def test_a_lone_surrogate_in_a_tool_argument_is_a_coded_tool_error(tmp_path: Path) -> None:
    """A tool call whose string holds a lone surrogate escape, high or low, or bytes that are
    not UTF-8, is answered at once with HZH347 as a tool error naming the argument, the
    string shown escaped; the calls after it are served."""
    answers = exchange(
        tmp_path,
        [
            call(2, "heinzel_show", b'{"name":"\\ud800"}'),
            call(3, "heinzel_chat", b'{"name":"weekly-report","text":"hi \\udfff there"}'),
            call(4, "heinzel_show", b'{"name":"caf\xe9"}'),
            call(5, "approve", b'{"items":["ok","\\ud83d"]}'),
        ],
    )
    for ident, argument, shown in [
        (2, "name", "\\ud800"),
        (3, "text", "hi \\udfff there"),
        (4, "name", "caf\\xe9"),
        (5, "items[1]", "\\ud83d"),
    ]:
        said = tool_error(answers[ident])
        assert f"HZH347: the argument `{argument}` is not UTF-8 text: '{shown}'\n" in said
        assert "\nhint: " in said
    assert not list((tmp_path / "home").rglob("rq-*.json"))


def test_a_frame_that_is_not_json_gets_a_parse_error(tmp_path: Path) -> None:
    """A line that is not JSON, a truncated one and one nested past any limit are each
    answered with JSON-RPC -32700 (id null); blank lines are skipped; the server goes on."""
    answers = exchange(
        tmp_path,
        [b"this is not json", b'{"jsonrpc":"2.0","id":7,"method":', b"", b"[" * 100_000],
    )
    errors = answers[None]
    assert [e.error.code for e in errors] == [types.PARSE_ERROR] * 3
    assert all(e.error.message.startswith("Parse error") for e in errors)
    assert 7 not in answers


def test_other_requests_are_answered_too(tmp_path: Path) -> None:
    """Any other request holding a lone surrogate is -32602 with HZH347 (-32600 with id null
    when the id is the string); JSON that is not a JSON-RPC message is -32600 under its id;
    a notification holding one has no id to answer and is dropped (logged); the session
    goes on."""
    answers = exchange(
        tmp_path,
        [
            b'{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{"cursor":"\\udc00"}}',
            b'{"jsonrpc":"2.0","id":9}',
            b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":"\\ud800"}}',
            b'{"jsonrpc":"2.0","id":"\\ud800","method":"tools/list"}',
        ],
    )
    assert isinstance(answers[8], types.JSONRPCError)
    assert answers[8].error.code == types.INVALID_PARAMS
    assert answers[8].error.message.startswith("HZH347: the field `params.cursor`")
    assert isinstance(answers[9], types.JSONRPCError)
    assert answers[9].error.code == types.INVALID_REQUEST
    (unreadable,) = answers[None]
    assert unreadable.error.code == types.INVALID_REQUEST
    assert unreadable.error.message.startswith("HZH347: the field `id`")


def test_a_request_whose_id_is_no_id_is_an_invalid_request(tmp_path: Path) -> None:
    """A request whose id is an object, an array, null, true, 1.5 or 2.0 is answered -32600
    with id null, as JSON-RPC 2.0 says of an id it can't read (the SDK read each as a
    notification and answered nothing, so the client waited forever); the session goes
    on."""
    ids = [b'{"n":1}', b"[1]", b"null", b"true", b"1.5", b"2.0"]
    frames = [b'{"jsonrpc":"2.0","id":' + i + b',"method":"tools/list"}' for i in ids]
    refused = exchange(tmp_path, frames)[None]
    assert [e.error.code for e in refused] == [types.INVALID_REQUEST] * len(ids), refused
    kinds = [e.error.message.rsplit(" not ", 1)[1] for e in refused]
    decimal = "a decimal number"
    assert kinds == ["an object", "an array", "null", "true", decimal, decimal]
    assert all("string or an integer" in e.error.message for e in refused)


def test_text_beyond_the_basic_plane_is_served_through_the_sdk_client(tmp_path: Path) -> None:
    """The SDK's client sends a name of letters outside ASCII and an emoji (a surrogate
    pair in JSON's escapes is text, not a refusal): the tool runs and says no such name."""

    async def body(s: ClientSession) -> Any:
        return await s.call_tool("heinzel_wake", {"name": "nobody", "message": "männchen-🧝"})

    result = session(priya(tmp_path), tmp_path, body)
    assert result.is_error and "HZH080: " in text(result)
    escaped = call(10, "heinzel_wake", b'{"name":"nobody","message":"\\ud83e\\udddd"}')
    assert "HZH080: " in tool_error(exchange(tmp_path, [escaped], frozenset({10}))[10])
