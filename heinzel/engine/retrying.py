"""Provider retries: a transient fault is asked again with tenacity, a bounded number of times.

`RetryingModel` wraps a provider's model around its model request, the step think
records. Transient is what `heinzel.engine.faults` says: a connection refused or broken,
no answer within the request's timeout, a 429 or a 5xx. Each attempt has its own timeout
(``RetryPolicy.timeout``, ``[heinzel] request_timeout``: pydantic-ai's ``timeout`` model
setting, which the provider's client applies), and a reply the provider's client could
not even parse (``AttributeError`` on ``{"choices": "oops"}``) becomes
`heinzel.engine.faults.WrongShapeReply`, HZE012, never a Python name. The provider's
own client retries nothing (`resolve_model` sets its ``max_retries`` to 0), so each
attempt is counted once, here. An attempt the provider
refused returns no usage and spends nothing; only the reply that comes back is recorded
(one ``model.request``) and charged, so a retry never spends twice, and the turn's cap is
checked before the step as ever. The wait honours the provider's ``retry-after-ms`` or
``Retry-After`` (pydantic-ai parses both into `ModelHTTPError.retry_after`), else backs
off exponentially, each wait capped at ``max_wait``; ``sleep`` is injectable, so a fixed
clock (``HZ_NOW``) never sleeps for real. When the attempts run out, the last
error goes up and think ends the turn failed with its fault's code (`heinzel.engine.run`).
The turn's own time limit bounds the attempts and their waits together (think's deadline).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import field

from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

from heinzel.engine.errors import EngineError
from heinzel.engine.faults import RETRYABLE_STATUS, WrongShapeReply, describe, fault_of, transient
from ledger.records import frozen_record

__all__ = [
    "DEFAULT_TIMEOUT",
    "RETRYABLE",
    "RetryPolicy",
    "RetryingModel",
    "no_sleep",
    "provider_failure",
]

RETRYABLE = RETRYABLE_STATUS
"""The statuses worth asking again: timeouts, conflicts, rate limits, overload, 5xx."""

DEFAULT_TIMEOUT = 60.0
"""Seconds one attempt at a model request may take (``[heinzel] request_timeout``)."""

_UNPARSED = (AttributeError, TypeError, KeyError, IndexError, ValueError)
"""What a provider's client raises on a reply it could not read (not the API's shape)."""


async def no_sleep(_seconds: float) -> None:
    """A wait that returns at once (a fixed clock's: tests never sleep for real)."""


@frozen_record
class RetryPolicy:
    """How often and how long to ask a failing provider again."""

    attempts: int = 3
    """Attempts in all, the first included."""
    max_wait: float = 30.0
    """The longest single wait in seconds, whatever ``Retry-After`` says."""
    sleep: Callable[[float], Awaitable[None]] = field(default=asyncio.sleep)
    timeout: float | None = DEFAULT_TIMEOUT
    """Seconds one attempt may take (None: the provider client's own, ten minutes)."""


class RetryingModel(WrapperModel):
    """A provider's model whose request is retried by `RetryPolicy` on a transient fault."""

    def __init__(self, wrapped: Model, policy: RetryPolicy | None = None) -> None:
        super().__init__(wrapped)
        self.policy = policy or RetryPolicy()
        self.attempts = 0
        """The attempts the last request took (what a failure reports)."""
        self._backoff = wait_exponential(multiplier=1, max=self.policy.max_wait)

    def _wait(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome is not None else None
        after = error.retry_after if isinstance(error, ModelHTTPError) else None
        if after is not None and after >= 0:
            return min(float(after), self.policy.max_wait)
        return float(self._backoff(state))

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        """The wrapped model's request, each attempt bounded by the policy's timeout,
        asked again while the fault is transient."""
        settings: ModelSettings = dict(model_settings or {})  # type: ignore[assignment]
        if self.policy.timeout is not None and "timeout" not in settings:
            settings["timeout"] = self.policy.timeout
        retrying = AsyncRetrying(
            stop=stop_after_attempt(max(1, self.policy.attempts)),
            wait=self._wait,
            retry=retry_if_exception(transient),
            sleep=self.policy.sleep,
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                self.attempts = attempt.retry_state.attempt_number
                try:
                    return await self.wrapped.request(messages, settings, model_request_parameters)
                except _UNPARSED as error:
                    said = f"{type(error).__name__} reading the reply"
                    raise WrongShapeReply(said) from error
        raise AssertionError("tenacity made no attempt")  # pragma: no cover


def provider_failure(error: BaseException, model: Model, name: str) -> EngineError | None:
    """The coded error of a provider's fault that outlived the retries (None: ``error`` is
    no provider fault), with the fix (the retry command for ``name``, the
    Heinzelmännchen whose turn failed)."""
    fault = fault_of(error)
    if fault is None:
        return None
    attempts = model.attempts if isinstance(model, RetryingModel) else 1
    return describe(fault, model_name=model.model_name, attempts=attempts, name=name)
