"""The think step's records in a turn body, and the fold that rebuilds its Conversation.

The engine appends these records through `Recorder.body` (the body holds content,
the spine only hashes):

- ``{"kind": "messages", "messages": [...], "usage": {...}, "usd": "..."}``: messages
  settled by a model request (the request sent, the response, anything enqueued),
  with the Conversation's cumulative usage and the turn's cumulative cost;
- ``{"kind": "pending", "messages": [...]}``: the request not yet sent (tool results
  after a tool step; the context before the first request), replaced by the next;
- ``{"kind": "conversation", "conversation": {...}, "usd": "..."}``: a whole
  Conversation (a pause on deferred requests, or the snapshot of a stop);
- ``{"kind": "tool.started", "id": ..., "tool": ...}``: an unsafe tool about to run.

`Saved.fold` reads them back, so a resumed think step continues from the last
recorded model message, with its usage and cost, never from scratch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field
from decimal import Decimal, InvalidOperation
from typing import Any

import pydantic_core
from pydantic import TypeAdapter, ValidationError
from pydantic_ai import ModelMessagesTypeAdapter
from pydantic_ai import messages as m
from pydantic_ai.conversation import Conversation, ConversationTypeAdapter
from pydantic_ai.messages import ModelMessage
from pydantic_ai.usage import RunUsage

from heinzel.engine.errors import BAD_BODY, EngineError
from ledger.records import mutable_record

__all__ = ["Saved", "dump_conversation", "dump_messages", "dump_usage", "messages_json"]

_USAGE = TypeAdapter(RunUsage)


INFERRED: frozenset[type] = frozenset(
    {
        m.ModelRequest,
        m.ModelResponse,
        m.SystemPromptPart,
        m.UserPromptPart,
        m.ToolReturnPart,
        m.RetryFeedbackPart,
        m.RetryPromptPart,
        m.TextPart,
        m.ThinkingPart,
        m.ToolCallPart,
        m.CompactionPart,
        m.FilePart,
        m.NativeToolCallPart,
        m.NativeToolReturnPart,
    }
)
"""The message and part classes (exactly these, no subclass) whose dump by inference is
byte for byte `ModelMessagesTypeAdapter`'s (`tests/engine/test_body_dump.py` writes each
both ways)."""


def dump_messages(messages: Sequence[ModelMessage]) -> list[Any]:
    """Messages as JSON-ready data: the bytes `ModelMessagesTypeAdapter` writes.

    That adapter builds its schema on first use (about 150 M instructions, 1.4x ``python -c
    pass``, a third of what a fresh wake spends beyond pydantic-ai's import). Messages of
    the `INFERRED` classes are dumped by pydantic-core's inference instead, which gives the
    same data without a schema (a tool result's own serializer is the one the adapter
    uses); anything else goes through the adapter."""
    listed = list(messages)
    if _inferable(listed):
        inferred: list[Any] = pydantic_core.to_jsonable_python(listed, bytes_mode="base64")
        return inferred
    dumped: list[Any] = ModelMessagesTypeAdapter.dump_python(listed, mode="json")
    return dumped


def messages_json(messages: Sequence[ModelMessage]) -> bytes:
    """Messages as the JSON text ``ModelMessagesTypeAdapter.dump_json`` writes (the same
    bytes; a paid request's size is taken from it), without its schema for `INFERRED`."""
    listed = list(messages)
    if _inferable(listed):
        return pydantic_core.to_json(listed, bytes_mode="base64")
    return ModelMessagesTypeAdapter.dump_json(listed)


def _inferable(messages: list[ModelMessage]) -> bool:
    return all(
        type(message) in INFERRED and all(type(part) in INFERRED for part in message.parts)
        for message in messages
    )


def dump_usage(usage: RunUsage) -> dict[str, Any]:
    """Usage as JSON-ready data."""
    dumped: dict[str, Any] = _USAGE.dump_python(usage, mode="json")
    return dumped


def dump_conversation(conversation: Conversation) -> dict[str, Any]:
    """A whole Conversation as JSON-ready data (ConversationTypeAdapter)."""
    dumped: dict[str, Any] = ConversationTypeAdapter.dump_python(conversation, mode="json")
    return dumped


@mutable_record
class Saved:
    """What the body holds of the think step so far."""

    settled: list[ModelMessage] = field(default_factory=list)
    pending: list[ModelMessage] = field(default_factory=list)
    usage: RunUsage = field(default_factory=RunUsage)
    usd: Decimal = Decimal(0)
    last_usd: Decimal = Decimal(0)
    conversation_id: str | None = None
    deferred: Conversation | None = None
    started: set[str] = field(default_factory=set)
    records: int = 0

    @property
    def empty(self) -> bool:
        """True when the body holds nothing of a think step."""
        return self.records == 0

    def conversation(self) -> Conversation:
        """The Conversation to continue: settled messages, then the pending request."""
        if self.deferred is not None:
            return self.deferred
        kwargs: dict[str, Any] = {}
        if self.conversation_id:
            kwargs["conversation_id"] = self.conversation_id
        return Conversation(messages=[*self.settled, *self.pending], usage=self.usage, **kwargs)

    @classmethod
    def fold(cls, records: Sequence[Mapping[str, Any]]) -> Saved:
        """Rebuild from body records; unknown kinds are skipped, a damaged one is HZE006."""
        saved = cls()
        for index, record in enumerate(records):
            try:
                saved._apply(record)
            except (ValidationError, InvalidOperation, KeyError, TypeError) as error:
                raise EngineError(
                    BAD_BODY,
                    f"body record {index} ({record.get('kind')!r}) can't be read: {error}"[:300],
                    "the turn can't resume from this body; retry the turn from gather",
                ) from error
        return saved

    def _apply(self, record: Mapping[str, Any]) -> None:
        kind = record.get("kind")
        if kind == "messages":
            self.settled.extend(ModelMessagesTypeAdapter.validate_python(record["messages"]))
            self.pending = []
            self.deferred = None
            self.usage = _USAGE.validate_python(record["usage"])
            usd = Decimal(str(record["usd"]))
            self.last_usd = usd - self.usd
            self.usd = usd
            self.conversation_id = record.get("conversation_id") or self.conversation_id
        elif kind == "pending":
            self.pending = list(ModelMessagesTypeAdapter.validate_python(record["messages"]))
            self.conversation_id = record.get("conversation_id") or self.conversation_id
        elif kind == "conversation":
            conversation = ConversationTypeAdapter.validate_python(record["conversation"])
            self.settled = list(conversation.messages)
            self.pending = []
            self.usage = conversation.usage
            self.usd = Decimal(str(record["usd"]))
            self.conversation_id = conversation.conversation_id
            self.deferred = conversation if conversation.deferred_tool_requests else None
        elif kind == "tool.started":
            self.started.add(str(record["id"]))
        else:
            return
        self.records += 1
