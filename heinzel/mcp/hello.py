"""``hz mcp``'s handshake and lists, answered before the MCP SDK loads.

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

The SDK then loads in a background thread while the lists a client asks next
(``tools/list``, ``prompts/list``, ``resources/list``, ``resources/templates/list``) are
answered here too, from ``tools.json`` beside this module: the SDK's own answers for this
server at each protocol version, written by ``python -m tests.hz_mcp.listing`` and held
equal to the SDK's live answers by a test. Notifications read meanwhile are kept for the
SDK; the first frame that is none of these (a tool call, a ``ping``, a list asked with a
cursor) hands the wire to the SDK, which serves it and every frame after, once loaded.
"""

from __future__ import annotations

import json
import signal
import threading
from pathlib import Path
from typing import IO, Any

__all__ = [
    "HANDSHAKE_VERSIONS",
    "INSTRUCTIONS",
    "LISTINGS",
    "LISTS",
    "early_list",
    "early_reply",
    "initialize_result",
    "listings",
    "serve",
]

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The protocol versions the SDK reaches through ``initialize``, oldest to newest
(``mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS``); a client asking another gets the newest."""

INSTRUCTIONS = (
    "hz's Heinzelmännchen: durable agents with one contract and one session each. "
    "heinzel_list and heinzel_show read; the other tools act as the user would."
)


LISTINGS = Path(__file__).with_name("tools.json")
"""The SDK's answers to `LISTS` for this server, by protocol version (`listings`)."""

LISTS = ("tools/list", "prompts/list", "resources/list", "resources/templates/list")
"""The requests answered before the SDK loads, after the handshake."""


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


def listings(version: str) -> dict[str, Any] | None:
    """The SDK's results to `LISTS` at ``version`` (those it answers with a result), from
    `LISTINGS`; None when the file is missing or unreadable (the SDK answers them then)."""
    try:
        shipped = json.loads(LISTINGS.read_text(encoding="utf-8"))
        for group in shipped["listings"]:
            if version in group["versions"]:
                return dict(group["results"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return None


def early_list(raw: bytes, results: dict[str, Any]) -> bytes | None:
    """The reply line to ``raw`` when it is a request for one of ``results``' lists with
    no cursor (``_meta`` aside); None for anything else (the SDK's to answer)."""
    try:
        message = json.loads(raw)
        raw.decode("utf-8")
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None
    ident, params = message.get("id"), message.get("params", {})
    if message.get("method") not in results or not isinstance(ident, int | str):
        return None
    if isinstance(ident, bool) or not isinstance(params, dict) or set(params) - {"_meta"}:
        return None
    reply = {"jsonrpc": "2.0", "id": ident, "result": results[message["method"]]}
    try:
        line = json.dumps(reply, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate in the id: the SDK's screen answers it
        return None
    return line + b"\n"


def _notification(raw: bytes) -> bool:
    """Whether ``raw`` is a notification (kept for the SDK, no answer due)."""
    try:
        message = json.loads(raw)
    except (ValueError, RecursionError):
        return False
    return isinstance(message, dict) and "method" in message and "id" not in message


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
    the handshake and the lists answered first while the SDK loads in the background
    (`heinzel.mcp.server.build_server`), then the SDK served from the first frame it must
    answer.

    Ctrl-C ends the process at once, as SIGTERM does: the SDK reads stdin in a worker
    thread that a KeyboardInterrupt cannot end, so the server went on until stdin closed.
    A turn a tool was running is left as after any crash; the next tick resumes it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    from heinzel.mcp.wire import claimed

    with claimed() as (wire_in, wire_out):
        first = wire_in.readline()
        early = early_reply(first) if first else None
        if early is None:
            from heinzel.mcp.frames import serve_claimed
            from heinzel.mcp.server import build_server

            serve_claimed(build_server(home), wire_in, wire_out, first=[first])
            return
        wire_out.write(early[0])
        wire_out.flush()
        loading = _Loading(home)
        asked = json.loads(first)["params"]["protocolVersion"]
        version = initialize_result(asked)["protocolVersion"]
        kept = [first, *_lists(wire_in, wire_out, listings(version))]
        server = loading.server()
        from heinzel.mcp.frames import serve_claimed

        serve_claimed(server, wire_in, wire_out, first=kept, answered=early[1])


def _lists(wire_in: IO[bytes], wire_out: IO[bytes], results: dict[str, Any] | None) -> list[bytes]:
    """Answer the lists asked from ``results`` until a frame only the SDK can answer (or
    the end of the input); the frames read and not answered here, in order, for the SDK."""
    kept: list[bytes] = []
    while results is not None and (raw := wire_in.readline()):
        reply = early_list(raw, results)
        if reply is not None:
            wire_out.write(reply)
            wire_out.flush()
            continue
        kept.append(raw)
        if not _notification(raw):
            break
    return kept


class _Loading:
    """The SDK and hz's tools (`heinzel.mcp.server.build_server`) loading in a thread."""

    def __init__(self, home: str | None) -> None:
        self.home = home
        self.built: Any = None
        self.failed: BaseException | None = None
        self.thread = threading.Thread(target=self._load, name="hz-mcp-load", daemon=True)
        self.thread.start()

    def _load(self) -> None:
        try:
            from heinzel.mcp.server import build_server

            self.built = build_server(self.home)
        except BaseException as exc:  # raised again where it is waited for
            self.failed = exc

    def server(self) -> Any:
        """The server once loaded; what stopped it loading, raised again here."""
        self.thread.join()
        if self.failed is not None:
            raise self.failed
        return self.built
