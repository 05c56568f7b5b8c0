"""``hz mcp``'s handshake, answered before the MCP SDK loads.

The SDK (``mcp``, ``mcp_types``: hundreds of pydantic models) takes seconds to import on
a loaded machine, and a client such as Claude Code gives a server a fixed time to answer
``initialize`` before it starts without its tools. So `serve` claims the wire, reads the
first frame, and when it is a well-formed ``initialize`` request answers it at once from
what is here (the SDK's own answer for this server: the protocol version negotiated as the
SDK negotiates it, its capabilities, name and instructions; a test holds the two equal),
with nothing of the SDK, the providers or pydantic-ai imported. Only then does it import
the SDK and build the tools; the SDK is handed the same ``initialize`` frame first (so its
session state is initialized as after any handshake) and its reply to it is dropped
(`heinzel.mcp.frames`): the client sees one answer. Any other first frame (a modern
client's request, a malformed one) goes to the SDK as before, answered by it.
"""

from __future__ import annotations

import json
import signal
from typing import Any

__all__ = ["HANDSHAKE_VERSIONS", "INSTRUCTIONS", "early_reply", "initialize_result", "serve"]

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The protocol versions the SDK reaches through ``initialize``, oldest to newest
(``mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS``); a client asking another gets the newest."""

INSTRUCTIONS = (
    "hz's Heinzelmännchen: durable agents with one contract and one session each. "
    "heinzel_list and heinzel_show read; the other tools act as the user would."
)


def initialize_result(requested: str) -> dict[str, Any]:
    """The ``initialize`` result the SDK gives this server for a client asking ``requested``."""
    return {
        "capabilities": {
            "prompts": {"listChanged": False},
            "resources": {"listChanged": False, "subscribe": False},
            "tools": {"listChanged": False},
        },
        "instructions": INSTRUCTIONS,
        "protocolVersion": requested if requested in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1],
        "serverInfo": {"name": "hz", "version": ""},
    }


def early_reply(raw: bytes) -> tuple[bytes, int | str] | None:
    """The reply line to ``raw`` and its id, when ``raw`` is a well-formed ``initialize``
    request (the fields the SDK requires there, text all through); None for anything else,
    which the SDK answers itself."""
    try:
        message = json.loads(raw)
        raw.decode("utf-8")
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None
    ident, params = message.get("id"), message.get("params")
    if message.get("method") != "initialize" or not isinstance(ident, int | str):
        return None
    if isinstance(ident, bool):  # JSON true is no id
        return None
    if not isinstance(params, dict) or not _fits(params):
        return None
    reply = {"jsonrpc": "2.0", "id": ident, "result": initialize_result(params["protocolVersion"])}
    try:
        line = json.dumps(reply, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate in the id: the SDK's screen answers it
        return None
    return line + b"\n", ident


def _fits(params: dict[str, Any]) -> bool:
    """What the SDK's ``InitializeRequestParams`` requires: a protocol version, the
    client's capabilities and its name and version."""
    client = params.get("clientInfo")
    return (
        isinstance(params.get("protocolVersion"), str)
        and isinstance(params.get("capabilities"), dict)
        and isinstance(client, dict)
        and isinstance(client.get("name"), str)
        and isinstance(client.get("version"), str)
    )


def serve(home: str | None) -> None:
    """Serve the tools over stdio until the client closes the pipe, or SIGTERM or Ctrl-C:
    the handshake answered first, then the SDK loaded (`heinzel.mcp.server.build_server`,
    served from the first frame read).

    Ctrl-C ends the process at once, as SIGTERM does: the SDK reads stdin in a worker
    thread that a KeyboardInterrupt cannot end, so the server went on until stdin closed.
    A turn a tool was running is left as after any crash; the next tick resumes it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    from heinzel.mcp.wire import claimed

    with claimed() as (wire_in, wire_out):
        first = wire_in.readline()
        early = early_reply(first) if first else None
        if early is not None:
            wire_out.write(early[0])
            wire_out.flush()
        from heinzel.mcp.frames import serve_claimed
        from heinzel.mcp.server import build_server

        serve_claimed(
            build_server(home),
            wire_in,
            wire_out,
            first=first,
            answered=None if early is None else early[1],
        )
