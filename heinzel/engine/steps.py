"""The think step's writer: a body record and a spine line per step, and the money spent.

`Stepper` is what `heinzel.engine.run.think` calls after each node: after a model
request, the settled messages into the body and one ``step.model`` line (tokens,
cost, the body record's hash); after a tool step, the pending request into the body and
each call's ``{tool, id, h}``, carried as ``tools`` by the next ``step.model`` line (the
request that sends the results back). Calls no request follows (a stop, a cap, an error
ends the step first) get one ``step.tool`` line each (`flush_tools`); a handoff always
gets its own ``step.handoff`` line.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse
from pydantic_ai.models import Model

from heinzel.engine.body import Saved, dump_messages, dump_usage
from heinzel.engine.money import Budget
from heinzel.engine.spec import Recorder

__all__ = ["Stepper", "short_hash"]


def short_hash(value: Any) -> str:
    """The first 12 hex digits of the SHA-256 of ``value``'s canonical JSON (a spine pointer)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


class Stepper:
    """The state of one think step: what is recorded, spent and checkpointed."""

    def __init__(
        self,
        recorder: Recorder,
        budget: Budget,
        model: Model,
        saved: Saved,
        safety: Mapping[str, bool],
    ) -> None:
        self.recorder = recorder
        self.budget = budget
        self.model = model
        self.usd = saved.usd
        self.last_usd = saved.last_usd
        self.settled = len(saved.settled)
        self.safety = safety
        self.seen_calls: set[str] = set()
        self.tools: list[dict[str, Any]] = []
        """Calls whose results the next model request sends: its line carries them."""

    def record_request(
        self, messages: list[ModelMessage], run_usage: Any, conversation_id: str
    ) -> None:
        """Write the messages settled since the last record; a model response gets its line."""
        new = messages[self.settled :]
        if not new:
            return
        responses = [m for m in new if isinstance(m, ModelResponse)]
        cost: Decimal | None = Decimal(0)
        if responses:
            response = responses[-1]
            pricing, system = self.budget.pricing, self.model.system
            cost = pricing.cost(self.model.model_name, system, response.usage)
            if cost is None and response.model_name:
                cost = pricing.cost(response.model_name, system, response.usage)
            before = self.usd
            self.usd = self.budget.at_cap(self.usd) if cost is None else self.usd + cost
            self.last_usd = self.usd - before
        digest = self.recorder.body(
            {
                "kind": "messages",
                "messages": dump_messages(new),
                "usage": dump_usage(run_usage),
                "usd": str(self.usd),
                "conversation_id": conversation_id,
            }
        )
        self.settled = len(messages)
        if not responses:
            return
        usage = responses[-1].usage
        data: dict[str, Any] = {
            "n": run_usage.requests,
            "in": usage.input_tokens,
            "out": usage.output_tokens,
            "usd": str(self.last_usd) if cost is not None else "cap",
            "body": digest.removeprefix("sha256:")[:12],
        }
        if self.tools:
            data["tools"], self.tools = self.tools, []
        if usage.cache_read_tokens:
            data["cached"] = usage.cache_read_tokens
        self.recorder.checkpoint("step.model", data)

    def record_tools(
        self, parts: Sequence[Any], interrupted: Sequence[str], *, followed: bool = False
    ) -> None:
        """Each tool result: tool, call id, result hash; ``ok`` only when not success.

        ``followed``: a model request sends these results next, so its line carries them
        (`tools`); otherwise each is a ``step.tool`` line now.
        """
        for part in parts:
            if part.part_kind not in ("tool-return", "retry-prompt"):
                continue
            call_id = part.tool_call_id
            name = getattr(part, "tool_name", None) or ""
            if call_id in self.seen_calls or name not in self.safety:
                continue
            self.seen_calls.add(call_id)
            outcome = getattr(
                part, "outcome", "retried" if part.part_kind == "retry-prompt" else "success"
            )
            if call_id in interrupted:
                outcome = "interrupted"
            data = {"tool": name, "id": call_id, "h": short_hash(getattr(part, "content", None))}
            if outcome != "success":
                data["ok"] = outcome
            if not self.safety[name]:
                data["safe"] = False
            if name == "handoff":
                self.recorder.checkpoint("step.handoff", data)
            elif followed:
                self.tools.append(data)
            else:
                self.recorder.checkpoint("step.tool", data)

    def flush_tools(self) -> None:
        """The held calls as ``step.tool`` lines: the step ended before a request sent them."""
        held, self.tools = self.tools, []
        for data in held:
            self.recorder.checkpoint("step.tool", data)

    def record_pending(self, request: ModelRequest, conversation_id: str) -> None:
        """Write the request not yet sent (it lives on the node, not in all_messages())."""
        self.recorder.body(
            {
                "kind": "pending",
                "messages": dump_messages([request]),
                "conversation_id": conversation_id,
            }
        )
