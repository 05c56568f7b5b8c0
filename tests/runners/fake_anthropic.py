"""A small scripted stand-in for the Anthropic Messages API, on 127.0.0.1 only.

The real ``claude`` binary talks to it through ``ANTHROPIC_BASE_URL`` with a
dummy key. What the CLI sends (facts from running it): ``HEAD /`` first, then
``POST /v1/messages?beta=true`` with ``stream: true``; it expects server-sent
events in the order message_start, content_block_start/delta/stop per block,
message_delta (stop_reason, output tokens), message_stop. The reply is chosen
by a script from the number of tool results already in the conversation, so a
run is deterministic.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Block = dict[str, Any]
Script = Callable[[int], tuple[list[Block], str]]
"""Given how many tool results the conversation holds, the reply blocks and stop reason."""

IN_TOKENS = 1200
OUT_TOKENS = 40


def tool_use(index: int, name: str, arguments: dict[str, Any]) -> Block:
    """A tool_use block with a stable id."""
    return {"type": "tool_use", "id": f"toolu_01fake{index:018d}", "name": name, "input": arguments}


def text(value: str) -> Block:
    """A text block."""
    return {"type": "text", "text": value}


def count_tool_results(body: dict[str, Any]) -> int:
    """How many tool_result blocks the request's messages hold."""
    count = 0
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            count += sum(
                1
                for block in content
                if isinstance(block, dict) and block.get("type") == "tool_result"
            )
    return count


@dataclass
class FakeAnthropic:
    """The server's state: the script it follows and every request body it saw."""

    script: Script
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def message_requests(self) -> list[dict[str, Any]]:
        """The POST /v1/messages bodies that asked for a reply (not token counts)."""
        with self.lock:
            return [body for body in self.requests if body.get("messages") is not None]


def _handler(state: FakeAnthropic) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            return

        def _json(self, code: int, obj: object) -> None:
            data = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_HEAD(self) -> None:
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def do_GET(self) -> None:
            self._json(
                404, {"type": "error", "error": {"type": "not_found_error", "message": "fake"}}
            )

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                body = {}
            path = self.path.split("?")[0]
            if path.endswith("/count_tokens"):
                self._json(200, {"input_tokens": IN_TOKENS})
                return
            if not path.endswith("/messages"):
                self._json(
                    404, {"type": "error", "error": {"type": "not_found_error", "message": "fake"}}
                )
                return
            with state.lock:
                state.requests.append(body)
            blocks, stop = state.script(count_tool_results(body))
            model = body.get("model") or "claude-sonnet-4-5"
            usage = {
                "input_tokens": IN_TOKENS,
                "output_tokens": OUT_TOKENS,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            }
            message = {"id": "msg_01fake", "type": "message", "role": "assistant", "model": model}
            if not body.get("stream"):
                self._json(200, {**message, "content": blocks, "stop_reason": stop, "usage": usage})
                return
            self._stream(message, blocks, stop, usage)

        def _stream(self, message: Block, blocks: list[Block], stop: str, usage: Block) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("connection", "close")
            self.end_headers()

            def event(name: str, obj: Block) -> None:
                self.wfile.write(f"event: {name}\ndata: {json.dumps(obj)}\n\n".encode())
                self.wfile.flush()

            start = {**message, "content": [], "stop_reason": None, "stop_sequence": None}
            event(
                "message_start",
                {
                    "type": "message_start",
                    "message": {**start, "usage": {**usage, "output_tokens": 1}},
                },
            )
            for index, block in enumerate(blocks):
                if block["type"] == "text":
                    opened: Block = {"type": "text", "text": ""}
                    delta: Block = {"type": "text_delta", "text": block["text"]}
                else:
                    opened = {
                        "type": "tool_use",
                        "id": block["id"],
                        "name": block["name"],
                        "input": {},
                    }
                    delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
                event(
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": opened},
                )
                event(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
                event("content_block_stop", {"type": "content_block_stop", "index": index})
            event(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": OUT_TOKENS},
                },
            )
            event("message_stop", {"type": "message_stop"})
            self.close_connection = True

    return Handler


class Server:
    """The fake API listening on 127.0.0.1 on a free port, in a daemon thread."""

    def __init__(self, script: Script) -> None:
        self.state = FakeAnthropic(script)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self.state))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> Server:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()
