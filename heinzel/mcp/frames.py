"""``hz mcp``'s stdio: every frame read is answered or served, never dropped in silence.

The SDK's stdio transport drops a line it cannot validate: a non-JSON frame got no
answer, and a tool call whose string holds a lone surrogate (``"\\ud800"``, which its JSON
parser refuses) was never answered, so the client waited forever. Here each line is
screened before the SDK's transport sees it (`screen`):

- not JSON (or not UTF-8 JSON, or nested past Python's limit): JSON-RPC ``-32700 Parse
  error``, ``id`` null;
- a string anywhere in it that is not Unicode text (a lone surrogate escape, or bytes that
  are not UTF-8): ``HZH347``; a ``tools/call`` gets it as a tool error result
  (``isError``), any other request as ``-32602 Invalid params`` (``-32600``, id null,
  when the id itself is not text); a notification has no id to answer and is logged;
- a request (a ``method``) whose ``id`` is there but neither a string nor an integer (an
  object, an array, 1.5 or 2.0, true, null): ``-32600 Invalid Request``, ``id`` null, as
  JSON-RPC 2.0 says of an id that can't be read (the SDK took it for a notification and
  answered nothing);
- JSON the SDK's message types refuse: ``-32600 Invalid Request``, with the id when it
  has one;
- anything else goes to the SDK unchanged.

The refusals and the SDK's answers share one writer, a whole line per write, so frames
never interleave. As the SDK's own transport does, fd 0 reads the null device and fd 1
goes to stderr while serving, so a handler's stray output never reaches the wire.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import AsyncIterator
from typing import Any, BinaryIO, cast

import anyio
import mcp_types as types
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server

from heinzel.mcp.wire import claimed
from heinzel.strings.text import is_text, not_text

__all__ = ["screen", "serve_claimed", "serve_stdio"]

HINT = "send text as UTF-8; a JSON string may not hold a lone surrogate (\\ud800-\\udfff)"


def screen(raw: bytes) -> tuple[str | None, str | None]:
    """``(frame, answer)`` for one line read: the frame to hand to the SDK, or the answer
    (one JSON-RPC line) to write instead; both None for a blank line or a notification
    that can't be served."""
    text = raw.decode("utf-8", "surrogateescape")
    if not text.strip():
        return None, None
    try:
        message = json.loads(text)
    except (ValueError, RecursionError) as error:
        return None, _error(None, types.PARSE_ERROR, f"Parse error: {_why(error)}")
    ident = _id(message)
    bad = _not_text(message)
    if bad is not None:
        return None, _refused(message, ident, *bad)
    if _unreadable_id(message):
        said = f"Invalid Request: the id must be a string or an integer, not {_kind(message['id'])}"
        return None, _error(None, types.INVALID_REQUEST, said)
    try:
        types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValueError:
        return None, _error(ident, types.INVALID_REQUEST, "Invalid Request: not a JSON-RPC message")
    return text, None


def _refused(message: Any, ident: int | str | None, path: str, value: str) -> str | None:
    """The answer to ``message``, whose ``path`` holds ``value``, not Unicode text: a tool
    error for a tool call, else a JSON-RPC error; None (logged) with no id to answer."""
    refusal = not_text("HZH347", f"the {path}", value, HINT).render()
    if ident is None and isinstance(message, dict) and "id" in message:
        return _error(None, types.INVALID_REQUEST, refusal)  # its id is the string
    if ident is None:
        what = f"HZH347: the {path} of a message without an id is not UTF-8 text"
        print(f"hz mcp: {what}; dropped, with nothing to answer", file=sys.stderr)
        return None
    if message.get("method") != "tools/call":
        return _error(ident, types.INVALID_PARAMS, refusal)
    params = message.get("params")
    tool = str(params.get("name"))[:100] if isinstance(params, dict) else ""
    said = f"Error executing tool {tool}: {refusal}" if tool and is_text(tool) else refusal
    result = types.CallToolResult(
        content=[types.TextContent(type="text", text=said)], is_error=True
    )
    answer = types.JSONRPCResponse(
        jsonrpc="2.0",
        id=ident,
        result=result.model_dump(by_alias=True, exclude_none=True, mode="json"),
    )
    return answer.model_dump_json(by_alias=True, exclude_unset=True)


def _unreadable_id(message: Any) -> bool:
    """Whether ``message`` is a request whose id is neither a string nor an integer (a
    string that is not text is refused before, `_refused`)."""
    if not isinstance(message, dict) or "id" not in message or "method" not in message:
        return False
    ident = message["id"]
    return ident is None or isinstance(ident, bool | float | dict | list)


def _kind(value: Any) -> str:
    """What a JSON value is, in JSON's words."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    kinds = {dict: "an object", list: "an array", float: "a decimal number"}
    return kinds.get(type(value), type(value).__name__)


def _why(error: Exception) -> str:
    if isinstance(error, json.JSONDecodeError):
        return f"not JSON (line {error.lineno} column {error.colno})"
    if isinstance(error, RecursionError):
        return "nested too deeply"
    return "not JSON"


def _error(ident: int | str | None, code: int, message: str) -> str:
    error = types.ErrorData(code=code, message=message)
    answer = types.JSONRPCError(jsonrpc="2.0", id=ident, error=error)
    return answer.model_dump_json(by_alias=True, exclude_unset=True)


def _id(message: Any) -> int | str | None:
    """The request id to answer under, when it is one (an int, or a string that is text)."""
    if not isinstance(message, dict):
        return None
    ident = message.get("id")
    if isinstance(ident, bool) or not isinstance(ident, int | str):
        return None
    return ident if not isinstance(ident, str) or is_text(ident) else None


def _not_text(message: Any) -> tuple[str, str] | None:
    """The first string in ``message`` (keys too) that is not Unicode text, with its path
    (``argument `name```, ``field `params.x```), else None; walked without recursion."""
    stack: list[tuple[str, Any]] = [("", message)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            if not is_text(value):
                return _named(path), value
        elif isinstance(value, dict):
            for key, item in value.items():
                if not is_text(key):
                    return _named(path), key
                stack.append((f"{path}.{key}" if path else key, item))
        elif isinstance(value, list):
            stack.extend((f"{path}[{n}]", item) for n, item in enumerate(value))
    return None


def _named(path: str) -> str:
    if path.startswith("params.arguments."):
        return f"argument `{path.removeprefix('params.arguments.')}`"
    return f"field `{path}`" if path else "message"


class _Lines:
    """The screened frames of the wire's input, as the SDK's transport reads a text file."""

    def __init__(self, wire: BinaryIO, out: _Out, first: list[bytes] | None = None) -> None:
        self.wire = wire
        self.out = out
        self.first = list(first or [])  # frames read before the SDK loaded (`heinzel.mcp.hello`)

    def __aiter__(self) -> AsyncIterator[str]:
        return self._frames()

    async def _read(self) -> bytes:
        if self.first:
            return self.first.pop(0)
        return await anyio.to_thread.run_sync(self.wire.readline)

    async def _frames(self) -> AsyncIterator[str]:
        while raw := await self._read():
            frame, answer = screen(raw)
            if answer is not None:
                await self.out.write(answer + "\n")
                await self.out.flush()
            if frame is not None:
                yield frame


class _Out:
    """The wire's output: each `write` is one whole line, written under one lock."""

    def __init__(self, wire: BinaryIO, answered: int | str | None = None) -> None:
        self.wire = wire
        self.lock = threading.Lock()
        self.answered = answered  # the initialize answered already: the SDK's reply is dropped

    def _write(self, data: bytes) -> None:
        if self.answered is not None and self._drops(data):
            return
        with self.lock:
            self.wire.write(data)
            self.wire.flush()

    def _drops(self, data: bytes) -> bool:
        """Whether ``data`` is the SDK's reply to the ``initialize`` `heinzel.mcp.hello`
        answered (once); a reply that is an error where that one was a result is logged."""
        try:
            message = json.loads(data)
        except ValueError:
            return False
        if not isinstance(message, dict) or "method" in message:
            return False
        ident = message.get("id")
        if type(ident) is not type(self.answered) or ident != self.answered:
            return False
        self.answered = None
        if "error" in message:
            said = f"hz mcp: the SDK refused the initialize answered early: {message['error']}"
            print(said, file=sys.stderr)
        return True

    async def write(self, line: str) -> None:
        await anyio.to_thread.run_sync(self._write, line.encode("utf-8", "backslashreplace"))

    async def flush(self) -> None:
        """Each write is flushed already."""


def serve_stdio(server: MCPServer) -> None:
    """Serve ``server`` over stdio through the screen until the client closes stdin."""
    with claimed() as (wire_in, wire_out):
        serve_claimed(server, wire_in, wire_out)


def serve_claimed(
    server: MCPServer,
    wire_in: BinaryIO,
    wire_out: BinaryIO,
    *,
    first: list[bytes] | None = None,
    answered: int | str | None = None,
) -> None:
    """Serve ``server`` on the claimed wire (`heinzel.mcp.wire.claimed`) through the
    screen: ``first`` the frames already read from it (in order), and ``answered`` the id of the
    ``initialize`` already answered (`heinzel.mcp.hello`), whose SDK reply is dropped."""

    async def run() -> None:
        out = _Out(wire_out, answered)
        lines = cast("anyio.AsyncFile[str]", _Lines(wire_in, out, first))
        async with stdio_server(lines, cast("anyio.AsyncFile[str]", out)) as (read, write):
            # MCPServer.run_stdio_async does this with the SDK's own stdio_server().
            low = server._lowlevel_server
            await low.run(read, write, low.create_initialization_options())

    anyio.run(run)
