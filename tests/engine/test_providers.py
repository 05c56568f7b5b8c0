"""The wire path: the real provider model classes inside pydantic-ai against fake servers.

Each test starts a small HTTP server on 127.0.0.1 that speaks just enough of the
Anthropic messages API or the OpenAI chat completions API: a first answer with two
tool calls, then the outcome through the output tool, each with usage. No key, no
network beyond the loopback.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
from pydantic_ai.models import override_allow_model_requests

from heinzel.engine import SpineView, build_context, resolve_model, think
from heinzel.engine.testing import MemoryRecorder

DONE = "every item of `merged_prs` is covered"
OUTCOME = {
    "report": "drafted from the wire",
    "draft": {
        "text": "## section\n- PR 1\n",
        "output": "section",
        "contract_version": 1,
        "done_when": [{"item": DONE, "met": True, "note": "ok"}],
    },
}
FIRST_CALLS = [
    ("last_approved", {}),
    ("report", {"verb": "read", "target": "prs", "description": "read the PRs"}),
]

Reply = Callable[[dict[str, Any], int], dict[str, Any]]


class Fake:
    """A bounded fake API server: answers with ``reply``, records every request body."""

    def __init__(self, reply: Reply, limit: int = 8) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.paths: list[str] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.bodies.append(body)
                fake.paths.append(self.path)
                if len(fake.bodies) > limit:
                    self.send_response(500)
                    self.end_headers()
                    return
                answer = reply(body, len(fake.bodies))
                if body.get("stream"):
                    out = sse(answer).encode()
                    kind = "text/event-stream"
                else:
                    out = json.dumps(answer).encode()
                    kind = "application/json"
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.server.timeout = 5
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def __enter__(self) -> Fake:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def sse(message: dict[str, Any]) -> str:
    """An Anthropic message as the server-sent events of a streamed answer."""
    start = {
        **message,
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": message["usage"]["input_tokens"], "output_tokens": 1},
    }
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
                "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])},
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


def output_tool(names: list[str]) -> str:
    return next(n for n in names if n.startswith("final_result"))


def anthropic_reply(body: dict[str, Any], n: int) -> dict[str, Any]:
    if n == 1:
        content = [
            {"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": args}
            for i, (name, args) in enumerate(FIRST_CALLS)
        ]
    else:
        name = output_tool([t["name"] for t in body["tools"]])
        content = [{"type": "tool_use", "id": "toolu_out", "name": name, "input": OUTCOME}]
    return {
        "id": f"msg_{n}",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": content,
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 1000, "output_tokens": 100},
    }


def openai_reply(body: dict[str, Any], n: int) -> dict[str, Any]:
    if n == 1:
        calls = [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for i, (name, args) in enumerate(FIRST_CALLS)
        ]
    else:
        name = output_tool([t["function"]["name"] for t in body["tools"]])
        calls = [
            {
                "id": "call_out",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(OUTCOME)},
            }
        ]
    return {
        "id": f"chat_{n}",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4o",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {"role": "assistant", "content": None, "tool_calls": calls},
            }
        ],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100},
    }


@pytest.fixture
def allow_requests() -> Iterator[None]:
    with override_allow_model_requests(True):
        yield


@pytest.mark.usefixtures("allow_requests")
class TestWirePath:
    def drive(self, spec: Any, budget: Any, name: str, base_url: str) -> Any:
        turn = spec()
        model = resolve_model(name, api_key="sk-fake", base_url=base_url)
        recorder = MemoryRecorder()
        result = asyncio.run(
            think(
                turn,
                build_context(turn, SpineView()),
                model=model,
                recorder=recorder,
                budget=budget(),
            )
        )
        return result, recorder

    def test_anthropic_messages(self, spec: Any, budget: Any) -> None:
        """Tool calls and the outcome over the Anthropic messages API, priced from usage."""
        with Fake(anthropic_reply) as fake:
            result, recorder = self.drive(spec, budget, "anthropic:claude-sonnet-4-6", fake.url)
        assert result.error is None, (result.error, fake.paths)
        assert result.status == "outcome" and result.disposition.disposition == "drafted"
        assert len(fake.bodies) == 2 and all("/v1/messages" in p for p in fake.paths)
        assert "You are a Heinzelmännchen" in json.dumps(
            fake.bodies[0]["system"], ensure_ascii=False
        )
        assert [k for k, _ in recorder.lines] == ["step.model", "step.model"]
        assert len(recorder.lines[1][1]["tools"]) == 2
        assert recorder.lines[0][1]["in"] == 1000 and result.usd > 0

    def test_openai_chat(self, spec: Any, budget: Any) -> None:
        """Tool calls and the outcome over OpenAI chat completions, through a gateway URL."""
        with Fake(openai_reply) as fake:
            result, recorder = self.drive(spec, budget, "openai-chat:gpt-4o", f"{fake.url}/v1")
        assert result.status == "outcome" and result.disposition.disposition == "drafted"
        assert fake.paths == ["/v1/chat/completions"] * 2
        tool_results = [m for m in fake.bodies[1]["messages"] if m["role"] == "tool"]
        assert [m["tool_call_id"] for m in tool_results] == ["call_0", "call_1"]
        assert recorder.lines[-1][1]["out"] == 100 and result.usd > 0
