"""Loopback servers speaking the Anthropic Messages API and OpenAI chat completions.

A `Provider` answers each POST with what its script says for that request: a tool call,
the outcome through pydantic-ai's output tool, an HTTP error, a malformed body, a page
that is no JSON, a refusal by the content filter, no answer at all (`Hang`: the
server sets `Provider.received` and holds the request until the test ends), or an answer
cut off after its headers (`Stall`). It records every request's path, headers and body,
so a test can check which key reached the provider and what the model was sent. Shapes
follow the providers' documented examples (``tool_use`` blocks and ``usage.input_tokens``;
``tool_calls`` and ``usage.prompt_tokens``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "Call",
    "Filtered",
    "Hang",
    "Http",
    "Outcome",
    "Page",
    "Provider",
    "Raw",
    "Stall",
    "closed_port",
]


@dataclass(frozen=True)
class Call:
    """A call of one of the turn's tools."""

    name: str
    args: dict[str, Any]


@dataclass(frozen=True)
class Outcome:
    """The final outcome, through the output tool (``final_result*``); a string is sent as
    the call's arguments as it is (garbage JSON on purpose)."""

    data: dict[str, Any] | str


@dataclass(frozen=True)
class Http:
    """An HTTP error status with a provider-shaped error body."""

    status: int


@dataclass(frozen=True)
class Raw:
    """A 200 whose body is ``text`` as it is (malformed on purpose)."""

    text: str


@dataclass(frozen=True)
class Page:
    """A 200 whose body is ``text`` with its content type (an HTML page, not the API)."""

    text: str = "<html><body><h1>Sign in</h1></body></html>"
    kind: str = "text/html; charset=utf-8"


@dataclass(frozen=True)
class Filtered:
    """The provider's content filter: OpenAI's ``finish_reason: content_filter``, Anthropic's
    ``stop_reason: refusal``, with no content."""


@dataclass(frozen=True)
class Hang:
    """No answer: the request is held until the provider is closed."""


@dataclass(frozen=True)
class Stall:
    """A reply cut off: ``200`` and its headers, then no body until the provider is closed."""


Step = Call | Outcome | Http | Raw | Page | Filtered | Hang | Stall
Script = Callable[[dict[str, Any], int], Step | list[Call]]


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class Provider:
    """A fake ``anthropic`` or ``openai`` server on 127.0.0.1 answering by ``script``."""

    api: str
    script: Script
    seen: list[Seen] = field(default_factory=list)
    received: threading.Event = field(default_factory=threading.Event)
    """Set once a request the script holds (`Hang`) has arrived."""
    release: threading.Event = field(default_factory=threading.Event)
    steps: threading.local = field(default_factory=threading.local)
    """The script's step for the request each server thread answers."""
    cached: int = 0
    """Of each answer's 1,000 input tokens, how many the provider says it read from its
    prompt cache (OpenAI's ``prompt_tokens_details.cached_tokens``, Anthropic's
    ``cache_read_input_tokens``)."""

    def __post_init__(self) -> None:
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                provider.seen.append(
                    Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                )
                step = provider.script(body, len(provider.seen))
                if isinstance(step, Hang):
                    provider.received.set()
                    provider.release.wait(timeout=600)
                    return
                if isinstance(step, Stall):
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", "1000")
                    self.end_headers()
                    self.wfile.flush()
                    provider.received.set()
                    provider.release.wait(timeout=600)
                    return
                provider.steps.step = step  # what `answer` answers (this thread's request)
                status, kind, out = provider.answer(body, len(provider.seen))
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(out)))
                self.send_header("retry-after-ms", "5")
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        """What ``HZ_BASE_URL`` is set to: the root for Anthropic, ``/v1`` for OpenAI."""
        root = f"http://127.0.0.1:{self.server.server_port}"
        return root if self.api == "anthropic" else root + "/v1"

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    def keys(self) -> list[str]:
        """The key each request carried."""
        return [
            s.headers.get("x-api-key") or s.headers.get("authorization", "").removeprefix("Bearer ")
            for s in self.seen
        ]

    def answer(self, body: dict[str, Any], n: int) -> tuple[int, str, bytes]:
        step = getattr(self.steps, "step", None) or self.script(body, n)
        if isinstance(step, Page):
            return 200, step.kind, step.text.encode()
        if isinstance(step, Filtered):
            reply = self._refused(n)
            if body.get("stream"):
                return 200, "text/event-stream", _sse(reply).encode()
            return 200, "application/json", json.dumps(reply).encode()
        if isinstance(step, Http):
            error = {"type": "error", "error": {"type": "api_error", "message": "boom"}}
            return step.status, "application/json", json.dumps(error).encode()
        if isinstance(step, Raw):
            return 200, "application/json", step.text.encode()
        calls = step if isinstance(step, list) else [step]
        names = self._tool_names(body)
        pairs = [
            (next(t for t in names if t.startswith("final_result")), c.data)
            if isinstance(c, Outcome)
            else (c.name, c.args)
            for c in calls
        ]
        reply = self._anthropic(pairs, n) if self.api == "anthropic" else self._openai(pairs, n)
        if self.cached and self.api == "anthropic":
            reply["usage"].update(
                input_tokens=1000 - self.cached, cache_read_input_tokens=self.cached
            )
        elif self.cached:
            reply["usage"]["prompt_tokens_details"] = {"cached_tokens": self.cached}
        if body.get("stream"):
            return 200, "text/event-stream", _sse(reply).encode()
        return 200, "application/json", json.dumps(reply).encode()

    def _refused(self, n: int) -> dict[str, Any]:
        if self.api == "anthropic":
            return {**self._anthropic([], n), "stop_reason": "refusal"}
        reply = self._openai([], n)
        reply["choices"][0].update(
            finish_reason="content_filter", message={"role": "assistant", "content": None}
        )
        return reply

    def _tool_names(self, body: dict[str, Any]) -> list[str]:
        tools = body.get("tools") or []
        if self.api == "anthropic":
            return [t["name"] for t in tools]
        return [t["function"]["name"] for t in tools]

    @staticmethod
    def _anthropic(pairs: list[tuple[str, Any]], n: int) -> dict[str, Any]:
        return {
            "id": f"msg_{n}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [
                {"type": "tool_use", "id": f"toolu_{n}_{i}", "name": name, "input": args}
                for i, (name, args) in enumerate(pairs)
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 1000, "output_tokens": 100},
        }

    @staticmethod
    def _openai(pairs: list[tuple[str, Any]], n: int) -> dict[str, Any]:
        calls = [
            {
                "id": f"call_{n}_{i}",
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": _json(args),
                },
            }
            for i, (name, args) in enumerate(pairs)
        ]
        return {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": 1700000000,
            "model": "gpt-4o-mini",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {"role": "assistant", "content": None, "tool_calls": calls},
                }
            ],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100},
        }


def _json(args: Any) -> str:
    """A call's arguments as sent: a string as it is (garbage on purpose), else JSON."""
    return args if isinstance(args, str) else json.dumps(args)


def _sse(message: dict[str, Any]) -> str:
    """An Anthropic message as the server-sent events of a streamed answer."""
    start = {**message, "content": [], "stop_reason": None}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(message["content"]):
        events += [
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {**block, "input": {}},
            },
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": _json(block["input"])},
            },
            {"type": "content_block_stop", "index": index},
        ]
    events += [
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": message["usage"]["output_tokens"]},
        },
        {"type": "message_stop"},
    ]
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then let go): a refused connection."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
