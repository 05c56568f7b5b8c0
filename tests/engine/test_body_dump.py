"""A turn body's messages are written without building pydantic-ai's message schema, and
their bytes are the ones `ModelMessagesTypeAdapter` writes (the body is a stored format:
docs/spine.md).

`heinzel.engine.body.dump_messages` dumps the classes in `INFERRED` by pydantic-core's
inference; each part kind pydantic-ai 2.68 has is written here both ways, compared as
the canonical bytes a body holds, and read back by the adapter."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import ModelMessagesTypeAdapter
from pydantic_ai import messages as m
from pydantic_ai.usage import RequestUsage

from heinzel.engine.body import INFERRED, dump_messages, messages_json
from ledger.event import canonical
from tests.models.fake_providers import Call, Outcome, Provider
from tests.tick.homes import env, make_home

AT = datetime(2026, 11, 6, 17, 0, 0, 123456, tzinfo=UTC)
PNG = m.BinaryContent(b"\x89PNG\r\n\x1a\n\x00\xff", media_type="image/png")
FILES: list[m.UserContent] = [
    m.ImageUrl("https://example.test/a.png"),
    m.DocumentUrl("https://example.test/d.pdf"),
    m.AudioUrl("https://example.test/a.mp3"),
    m.VideoUrl("https://example.test/v.mp4"),
    PNG,
]


def _legacy_retry() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return m.RetryPromptPart("fix it", tool_name="report", tool_call_id="c1", timestamp=AT)


REQUEST_PARTS: dict[str, Any] = {
    "system prompt": m.SystemPromptPart(
        "be brief", timestamp=AT, dynamic_ref="r", metadata={"k": 1}
    ),
    "user prompt, str": m.UserPromptPart("hello", timestamp=AT),
    "user prompt, list": m.UserPromptPart(
        ["look", m.TextContent("typed"), *FILES, m.CachePoint()], timestamp=AT
    ),
    "user prompt, tuple": m.UserPromptPart(("a", "b"), timestamp=AT),
    "tool return, str": m.ToolReturnPart("report", "ok", tool_call_id="c1", timestamp=AT),
    "tool return, data": m.ToolReturnPart(
        "report",
        {
            "n": 1,
            "at": AT,
            "usd": Decimal("1.50"),
            "raw": b"\x00\x01\xff",
            "took": timedelta(seconds=90),
            "pair": (1, 2),
            "set": {3},
            "none": None,
        },
        tool_call_id="c1",
        metadata={"m": [1]},
        timestamp=AT,
    ),
    "tool return, files": m.ToolReturnPart("report", FILES, tool_call_id="c1", timestamp=AT),
    "tool return, retried": m.ToolReturnPart(
        "report",
        "bad arguments",
        tool_call_id="c1",
        timestamp=AT,
        outcome="retried",
        retry=m.RetryInfo("validation_error", attempt=1, max_retries=3),
    ),
    "tool return, failed": m.ToolReturnPart(
        "report", "boom", tool_call_id="c1", timestamp=AT, outcome="failed"
    ),
    "retry feedback, str": m.RetryFeedbackPart(
        "try again", retry=m.RetryInfo("no_output", attempt=1), timestamp=AT
    ),
    "retry feedback, errors": m.RetryFeedbackPart(
        [{"type": "missing", "loc": ("a", 0), "msg": "Field required", "input": {"x": 1}}],
        retry=m.RetryInfo("validation_error"),
        timestamp=AT,
    ),
    "retry prompt (legacy)": _legacy_retry(),
    "compaction": m.CompactionPart("summary", metadata={"a": 1}),
}
RESPONSE_PARTS: dict[str, Any] = {
    "text": m.TextPart("hi", id="t1", provider_name="p", provider_details={"a": 1}),
    "thinking": m.ThinkingPart("hmm", id="th", signature="sig", provider_name="p"),
    "tool call, dict": m.ToolCallPart("report", {"verb": "read", "n": [1, 2]}, tool_call_id="c1"),
    "tool call, str": m.ToolCallPart("report", '{"verb": "read"}', tool_call_id="c1"),
    "tool call, none": m.ToolCallPart("report", None, tool_call_id="c1"),
    "compaction, provider's": m.CompactionPart("summary", id="x", provider_name="p"),
    "file": m.FilePart(PNG, id="f"),
    "native tool call": m.NativeToolCallPart(
        "web_search", {"q": "x"}, tool_call_id="n1", provider_name="p"
    ),
    "native tool return": m.NativeToolReturnPart(
        "web_search", {"hits": 1}, tool_call_id="n1", timestamp=AT, provider_name="p"
    ),
}


def _request(part: Any) -> m.ModelRequest:
    return m.ModelRequest(
        parts=[part],
        timestamp=AT,
        instructions="be kind",
        run_id="r",
        conversation_id="c",
        metadata={"m": 1},
    )


def _response(part: Any) -> m.ModelResponse:
    return m.ModelResponse(
        parts=[part],
        usage=RequestUsage(input_tokens=3, output_tokens=4, details={"x": 1}),
        model_name="function:x",
        timestamp=AT,
        provider_name="p",
        provider_details={"at": AT},
        provider_response_id="id",
        finish_reason="stop",
        run_id="r",
        conversation_id="c",
        metadata={"m": 1},
    )


KINDS: dict[str, m.ModelMessage] = {
    **{name: _request(part) for name, part in REQUEST_PARTS.items()},
    **{name: _response(part) for name, part in RESPONSE_PARTS.items()},
    "request, bare": m.ModelRequest(parts=[m.UserPromptPart("x", timestamp=AT)]),
    "response, bare": m.ModelResponse(parts=[m.TextPart("x")], timestamp=AT),
}


def _adapters(messages: list[m.ModelMessage]) -> str:
    return canonical(ModelMessagesTypeAdapter.dump_python(messages, mode="json"))


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_part_kind_is_written_as_the_adapter_writes_it(kind: str) -> None:
    """Byte for byte the adapter's body text, by inference (no schema); read back by the
    adapter (a legacy retry prompt comes back as the part it translates into), the messages
    are written as the adapter writes them again."""
    message = KINDS[kind]
    assert type(message) in INFERRED and all(type(part) in INFERRED for part in message.parts)
    written = canonical(dump_messages([message]))
    assert written == _adapters([message])
    assert messages_json([message]) == ModelMessagesTypeAdapter.dump_json([message])
    again = ModelMessagesTypeAdapter.validate_python(json.loads(written))
    assert canonical(dump_messages(again)) == _adapters(again)


def test_a_whole_conversation_is_written_as_the_adapter_writes_it() -> None:
    messages = list(KINDS.values())
    assert canonical(dump_messages(messages)) == _adapters(messages)
    assert messages_json(messages) == ModelMessagesTypeAdapter.dump_json(messages)


def test_a_kind_not_proven_goes_through_the_adapter() -> None:
    """A part hz has not proven (a speech part) is dumped by the adapter, so the bytes are
    its bytes whatever the kind."""
    speech = m.SpeechPart(speaker="assistant", transcript="hello", audio=PNG)
    message = _response(speech)
    assert type(speech) not in INFERRED
    assert canonical(dump_messages([message, *KINDS.values()])) == _adapters(
        [message, *KINDS.values()]
    )


_WAKE = """
import atexit, runpy, sys
from pydantic_ai import ModelMessagesTypeAdapter
atexit.register(lambda: print("message schema built:", ModelMessagesTypeAdapter.pydantic_complete))
sys.argv = ["hz", "heinzel", "wake", "report-0"]
runpy.run_module("heinzel", run_name="__main__")
"""


DONE = (
    "every pull request merged this week appears in exactly one bullet",
    "every issue that moved to Done this week is covered",
    "the section has at most eight bullets",
)
OUTCOME = {
    "report": "drafted the section",
    "draft": {
        "text": "## report-0\n\n- Express checkout: address autofill (#409)\n",
        "output": "section",
        "contract_version": 1,
        "done_when": [{"item": item, "met": True, "note": "checked"} for item in DONE],
    },
}


def _script(body: dict[str, Any], n: int) -> Any:
    """The bench's turn: one tool call (``report``), then the outcome."""
    if body["messages"][-1].get("role") == "tool":
        return Outcome(OUTCOME)
    return Call("report", {"verb": "read", "target": "inputs", "description": "read them"})


@pytest.mark.parametrize("paid", [False, True], ids=["offline", "openai"])
def test_a_drafted_wake_writes_its_body_without_the_message_schema(
    tmp_path: Path, paid: bool
) -> None:
    """The real wake, offline and on a loopback OpenAI server (whose requests are sized
    for the caps by `messages_json`): its body's messages are what the adapter writes for
    them, and the process never built the adapter's schema (about 150 M instructions)."""
    root, _ = make_home(tmp_path, 1)
    provider = Provider("openai", _script)
    extra = {
        "HZ_MODEL": "openai-chat:gpt-4o-mini",
        "HZ_BASE_URL": provider.base_url,
        "OPENAI_API_KEY": "sk-test",
    }
    try:
        done = subprocess.run(
            [sys.executable, "-c", _WAKE],
            cwd=root,
            env=env(root, **(extra if paid else {})),
            capture_output=True,
            text=True,
        )
    finally:
        provider.close()
    if paid:
        assert provider.seen, "the wake asked the loopback server"
    assert done.returncode == 0, done.stderr[-800:]
    assert "drafted" in done.stdout
    assert "message schema built: False" in done.stdout
    (body,) = (root / "home" / "heinzel").glob("hz-*/turns/*.jsonl")
    lines = body.read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    written = [r["messages"] for r in records if "messages" in r]
    assert len(written) >= 3
    for messages in written:
        read = ModelMessagesTypeAdapter.validate_python(messages)
        assert canonical(messages) == _adapters(read)
