"""Models by configuration: a model string becomes a pydantic-ai model, or a coded error.

``offline`` is hz's own deterministic model (`heinzel.engine.offline`);
``anthropic:<name>`` drives the Anthropic messages API, ``openai:<name>`` the
OpenAI Responses API and ``openai-chat:<name>`` Chat Completions, each through
pydantic-ai (our code never imports a vendor SDK). ``base_url`` points either at
a compatible gateway. The provider's client retries nothing (``max_retries=0``): hz
retries a transient fault itself, once per attempt (`heinzel.engine.retrying`); its HTTP
client checks each reply is JSON (`heinzel.engine.faults.check_reply`). A missing
extra (HZE002) or key (HZE003) is named with its fix, which is what ``hz system doctor``
shows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic_ai.models import Model

from heinzel.engine.errors import (
    CA_UNREADABLE,
    MISSING_EXTRA,
    MISSING_KEY,
    UNKNOWN_MODEL,
    EngineError,
)
from heinzel.engine.spec import Cause
from ledger.records import frozen_record

__all__ = ["PROVIDERS", "ModelChoice", "choose_model", "resolve_model"]

PROVIDERS = {
    "anthropic": ("anthropic", "ANTHROPIC_API_KEY"),
    "openai": ("openai", "OPENAI_API_KEY"),
    "openai-chat": ("openai", "OPENAI_API_KEY"),
}
"""Model prefix -> (the extra to install, the key's environment variable)."""

_FAST_CAUSES: frozenset[str] = frozenset({"approval"})


@frozen_record
class ModelChoice:
    """The configured models: ``[heinzel] model``, ``model_fast``, ``model_best`` and an
    optional class map (which wins over both)."""

    model: str = "offline"
    model_fast: str | None = None
    classes: Mapping[str, str] | None = None
    model_best: str | None = None


def choose_model(
    choice: ModelChoice, cause: Cause, model_class: str = "standard", *, summary: bool = False
) -> str:
    """The model string for a turn: fast for approval and summary turns, else by class."""
    if (cause in _FAST_CAUSES or summary) and choice.model_fast:
        return choice.model_fast
    if choice.classes and model_class in choice.classes:
        return choice.classes[model_class]
    if model_class == "fast" and choice.model_fast:
        return choice.model_fast
    if model_class == "best" and choice.model_best:
        return choice.model_best
    return choice.model


def _missing_extra(prefix: str) -> EngineError:
    extra = PROVIDERS[prefix][0]
    return EngineError(
        MISSING_EXTRA,
        f"the model needs the {extra!r} extra, which is not installed",
        f"install it: uv tool install 'heinzel[{extra}]' (or pip install 'heinzel[{extra}]')",
    )


_PROXY_VARIABLES = ("http_proxy", "all_proxy")
"""The environment's proxies for a plain ``http://`` URL (either case): with one set, the
client is the default one, which reads them."""


def _checked_client(base_url: str | None = None) -> Any:
    """pydantic-ai's HTTP client for a provider, with the hook that tells a reply that is
    no JSON (an HTML page) from one of the wrong shape (`heinzel.engine.faults.check_reply`).

    For a plain ``http://`` base URL (a local model server) and no proxy in the
    environment, its transport's TLS context loads no CA certificates (about a fifth of an
    OpenAI wake's own CPU): a context that verifies every certificate against none, so a
    redirect to ``https://`` can never reach a TLS connection, verified or not. Any other
    base URL gets pydantic-ai's default client, which loads the CA bundle once per client."""
    from pydantic_ai.models import create_async_httpx2_client

    from heinzel.engine.faults import check_reply

    if _plain_http(base_url):
        import ssl

        import httpx2

        refusing = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # hostname checked, cert required
        limits = (create_async_httpx2_client.__kwdefaults__ or {})["limits"]
        transport = httpx2.AsyncHTTPTransport(verify=refusing, limits=limits)
        client = create_async_httpx2_client(transport=transport)
    else:
        client = create_async_httpx2_client()
    hooks = client.event_hooks
    client.event_hooks = {**hooks, "response": [*hooks.get("response", []), check_reply]}
    return client


def _plain_http(base_url: str | None) -> bool:
    """Whether requests go to ``base_url`` over plain HTTP with no proxy between."""
    import os
    from urllib.parse import urlsplit

    if base_url is None or urlsplit(base_url).scheme.lower() != "http":
        return False
    return not any(
        os.environ.get(name) or os.environ.get(name.upper()) for name in _PROXY_VARIABLES
    )


def resolve_model(
    name: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Model:
    """The pydantic-ai model for ``name`` (keys from ``api_key`` or ``env``)."""
    if name == "offline":
        from heinzel.engine.offline import offline_model

        return offline_model()
    prefix, _, model_name = name.partition(":")
    if prefix not in PROVIDERS or not model_name:
        raise EngineError(
            UNKNOWN_MODEL,
            f"{name!r} is not a model hz can run",
            "use offline, anthropic:<model>, openai:<model> or openai-chat:<model>",
        )
    key_var = PROVIDERS[prefix][1]
    key = api_key or (env or {}).get(key_var)
    if not key:
        raise EngineError(
            MISSING_KEY,
            f"no API key for {name!r}",
            f"set {key_var}, or store it: hz system credential set {PROVIDERS[prefix][0]}",
        )
    try:
        if prefix == "anthropic":
            from pydantic_ai.models.anthropic import AnthropicModel
            from pydantic_ai.providers.anthropic import AnthropicProvider

            # Retries are hz's own (`heinzel.engine.retrying`), counted once: none here.
            http = _checked_client(base_url)
            client = AnthropicProvider(api_key=key, base_url=base_url, http_client=http).client
            return AnthropicModel(
                model_name,
                provider=AnthropicProvider(anthropic_client=client.with_options(max_retries=0)),
            )
        from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
        from pydantic_ai.providers.openai import OpenAIProvider

        openai = OpenAIProvider(
            base_url=base_url, api_key=key, http_client=_checked_client(base_url)
        ).client
        provider = OpenAIProvider(openai_client=openai.with_options(max_retries=0))
        if prefix == "openai-chat":
            return OpenAIChatModel(model_name, provider=provider)
        return OpenAIResponsesModel(model_name, provider=provider)
    except ImportError as error:
        raise _missing_extra(prefix) from error
    except OSError as error:  # the https client's CA bundle: SSL_CERT_FILE unreadable, not PEM
        raise _ca_unreadable(base_url, error) from error


def _ca_unreadable(base_url: str | None, error: OSError) -> EngineError:
    """HZE023: the verified client's CA certificates could not be loaded, naming what the
    environment pointed it at (``SSL_CERT_FILE``, ``SSL_CERT_DIR``) when it did."""
    import os

    named = [f"{v}={os.environ[v]}" for v in ("SSL_CERT_FILE", "SSL_CERT_DIR") if os.environ.get(v)]
    where = f" ({', '.join(named)})" if named else ""
    return EngineError(
        CA_UNREADABLE,
        f"the CA certificates to check {base_url or 'the provider'} against could not be "
        f"loaded{where}: {error.strerror or error}",
        "point SSL_CERT_FILE at a readable PEM bundle, or unset it to use the bundled one",
    )
