"""Every model request is paid for only after its worst case was reserved under the caps.

`CappedModel` wraps the turn's model (outside hz's provider retries, so one reservation
covers the attempts of one request; a refused attempt costs nothing). Before each request
it bounds what the request can cost: the request's size in bytes bounds its input tokens
(a token is at least one byte in the tokenizers of hz's providers), and ``max_tokens``,
sent with the request, bounds its output (`OUTPUT_TOKENS` unless the settings ask for
fewer). That worst case, at the model's price, goes to the `Purse`, which reserves it
durably against the turn's and the day's caps or refuses; a refusal raises `CapReached`
and nothing is sent. The reply's ``model.request`` line settles the reservation; a request
that provably cost nothing releases it (`heinzel.engine.faults.unpaid`: it reached no
provider, was refused with an HTTP error, or was answered without usage). A request whose
worst case is nothing (the free ``offline`` model) reserves nothing and writes no line.
Any other end (a crash, a reply cut off mid-body, a cancel mid-request) leaves it counted
in full (docs/engine.md, "The reservation protocol").
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from decimal import Decimal
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

from heinzel.engine.body import messages_json
from heinzel.engine.faults import unpaid, watching
from heinzel.engine.money import FREE_MODELS, Pricing, Purse

__all__ = ["OUTPUT_TOKENS", "CapReached", "CappedModel", "request_bytes"]

OUTPUT_TOKENS = 4096
"""The most output tokens a request may use (its ``max_tokens``), unless its settings ask
for fewer: the output half of its worst case."""


class CapReached(Exception):
    """A cap refused the next model request; nothing was sent."""

    def __init__(self, usd: Decimal) -> None:
        super().__init__(f"the next model request could cost {usd} USD, over a cap")
        self.usd = usd


def request_bytes(messages: list[ModelMessage], parameters: ModelRequestParameters) -> int:
    """The UTF-8 size of what a request sends (its messages with their instructions, and
    its tool definitions), serialised with room to spare: at least its input tokens."""
    sent = len(messages_json(messages))
    tools = json.dumps(dataclasses.asdict(parameters), default=str, ensure_ascii=False)
    return sent + len(tools.encode())


class CappedModel(WrapperModel):
    """The turn's model, each request reserved against the caps by ``purse`` first."""

    def __init__(self, wrapped: Model, pricing: Pricing, purse: Purse) -> None:
        super().__init__(wrapped)
        self.pricing = pricing
        self.purse = purse
        self.reserved = False
        """Whether the request under way reserved anything (a release then lets it go)."""

    def _reserve(
        self,
        messages: list[ModelMessage],
        settings: ModelSettings | None,
        parameters: ModelRequestParameters,
    ) -> ModelSettings:
        """Reserve the request's worst case (or raise `CapReached`); the settings to send,
        with the ``max_tokens`` the reservation assumed."""
        asked = (settings or {}).get("max_tokens")
        output = min(int(asked), OUTPUT_TOKENS) if asked else OUTPUT_TOKENS
        bounded: ModelSettings = {**(settings or {}), "max_tokens": output}
        free = self.model_name in FREE_MODELS  # its worst case is nothing, whatever its size
        size = 0 if free else request_bytes(messages, parameters)
        worst = self.pricing.worst(self.model_name, self.system, size, output)
        if worst is None:  # a price hz can't compute counts at the cap
            left = self.purse.budget.remaining(self.purse.spent_turn())
            worst = left if left is not None else Decimal(0)
        self.reserved = worst > 0  # a free model (``offline``) reserves nothing
        if self.reserved and not self.purse.reserve(worst):
            raise CapReached(worst)
        return bounded

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        """The wrapped request, sent only once its worst case is reserved."""
        bounded = self._reserve(messages, model_settings, model_request_parameters)
        with watching() as replies:
            try:
                return await self.wrapped.request(messages, bounded, model_request_parameters)
            except Exception as error:
                if unpaid(error, replies):
                    self._release()  # no reply, or none with usage: nothing spent
                raise

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: Any = None,
    ) -> AsyncGenerator[StreamedResponse]:
        """The wrapped streamed request, opened only once its worst case is reserved."""
        bounded = self._reserve(messages, model_settings, model_request_parameters)
        with watching() as replies:
            try:
                async with self.wrapped.request_stream(
                    messages, bounded, model_request_parameters, run_context
                ) as stream:
                    yield stream
            except Exception as error:
                if unpaid(error, replies):
                    self._release()
                raise

    def _release(self) -> None:
        if self.reserved:
            self.reserved = False
            self.purse.release()
