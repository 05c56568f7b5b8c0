"""Provider retries: a 429 or a 5xx is asked again with tenacity, a bounded number of times.

`RetryingModel` wraps a provider's model around its model request, the step think
records. The provider's own client retries nothing (`resolve_model` sets its
``max_retries`` to 0), so each attempt is counted once, here. An attempt the provider
refused returns no usage and spends nothing; only the reply that comes back is recorded
(one ``model.request``) and charged, so a retry never spends twice, and the turn's cap is
checked before the step as ever. The wait honours the provider's ``retry-after-ms`` or
``Retry-After`` (pydantic-ai parses both into `ModelHTTPError.retry_after`), else backs
off exponentially, each wait capped at ``max_wait``; ``sleep`` is injectable, so a fixed
clock (``HZ_NOW``) never sleeps for real. When the attempts run out, the last
`ModelHTTPError` goes up and think ends the turn failed (HZE010, `heinzel.engine.run`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

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

from heinzel.engine.errors import PROVIDER_FAILED, EngineError

__all__ = ["RETRYABLE", "RetryPolicy", "RetryingModel", "no_sleep", "provider_failure"]

RETRYABLE: frozenset[int] = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
"""The statuses worth asking again: timeouts, conflicts, rate limits, overload, 5xx."""


async def no_sleep(_seconds: float) -> None:
    """A wait that returns at once (a fixed clock's: tests never sleep for real)."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how long to ask a failing provider again."""

    attempts: int = 3
    """Attempts in all, the first included."""
    max_wait: float = 30.0
    """The longest single wait in seconds, whatever ``Retry-After`` says."""
    sleep: Callable[[float], Awaitable[None]] = field(default=asyncio.sleep)


def _retryable(error: BaseException) -> bool:
    return isinstance(error, ModelHTTPError) and error.status_code in RETRYABLE


class RetryingModel(WrapperModel):
    """A provider's model whose request is retried by `RetryPolicy` on a 429 or a 5xx."""

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
        """The wrapped model's request, asked again while the provider says try later."""
        retrying = AsyncRetrying(
            stop=stop_after_attempt(max(1, self.policy.attempts)),
            wait=self._wait,
            retry=retry_if_exception(_retryable),
            sleep=self.policy.sleep,
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                self.attempts = attempt.retry_state.attempt_number
                return await self.wrapped.request(
                    messages, model_settings, model_request_parameters
                )
        raise AssertionError("tenacity made no attempt")  # pragma: no cover


def provider_failure(error: ModelHTTPError, model: Model, name: str) -> EngineError:
    """HZE010 for a provider's HTTP error that outlived the retries, with the fix (the
    retry command for ``name``, the Heinzelmännchen whose turn failed)."""
    attempts = model.attempts if isinstance(model, RetryingModel) else 1
    status = error.status_code
    if status in (401, 403):
        fix = "check the key: `hz system doctor --online` says which one is used"
    elif status == 429:
        fix = f"the provider's rate limit: wait a while or raise it, then `hz heinzel retry {name}`"
    elif status in RETRYABLE:
        fix = f"the provider is failing: try again later with `hz heinzel retry {name}`"
    else:
        fix = "check the model name and base_url: `hz system doctor --online`"
    tries = "attempt" if attempts == 1 else "attempts"
    return EngineError(
        PROVIDER_FAILED,
        f"the provider answered HTTP {status} to {attempts} {tries} for {error.model_name}",
        fix,
    )
