"""The model a turn runs with: chosen by cause and class, resolved with the user's key.

Every path that runs a model (a wake, a tick's turn, chat, answer, retry, approval and
summary turns, a resumed turn, the created turn) comes here: the name from
``[heinzel] model | model_fast | model_best`` (`heinzel.engine.models.choose_model`),
the key from the provider's environment variable or the stored credential
(`heinzel.store.credentials.find_key`), and ``base_url`` for a compatible gateway.
A provider's model is wrapped in `RetryingModel` (a transient fault asked again with
tenacity, each attempt bounded by ``[heinzel] request_timeout``); under a fixed clock
(``HZ_NOW``) its waits return at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from heinzel.engine.models import ModelChoice, choose_model
from heinzel.engine.retrying import RetryingModel, RetryPolicy, no_sleep
from heinzel.store.credentials import model_with_key

if TYPE_CHECKING:
    from pydantic_ai.models import Model

    from heinzel.engine.spec import Cause
    from heinzel.session.sessions import Sessions

__all__ = ["model_name", "named_model", "turn_model"]


def model_name(service: Sessions, cause: Cause, model_class: str = "standard") -> str:
    """The configured model string for a turn of ``cause`` under ``model_class``."""
    config = service.settings.heinzel
    choice = ModelChoice(
        model=config.model, model_fast=config.model_fast, model_best=config.model_best
    )
    return choose_model(choice, cause, model_class)


def named_model(service: Sessions, name: str) -> Model:
    """The pydantic-ai model for ``name`` with the user's key and ``base_url``, retrying."""
    model = model_with_key(name, service.settings.heinzel.base_url, service.env)
    if name == "offline":
        return model
    fixed = bool(service.env.get("HZ_NOW"))
    timeout = service.settings.heinzel.request_timeout.total_seconds()
    policy = RetryPolicy(sleep=no_sleep, timeout=timeout) if fixed else RetryPolicy(timeout=timeout)
    return RetryingModel(model, policy)


def turn_model(service: Sessions, cause: Cause, model_class: str = "standard") -> Model:
    """The model a turn of ``cause`` runs with."""
    return named_model(service, model_name(service, cause, model_class))
