"""What went wrong between hz and the model's provider: one taxonomy, each fault with its code.

A think step whose model request failed ends the turn ``failed`` with a short code on the
spine (``turn.finished{error}``, never content) and the coded cause in the turn's body
(code, message, hint), which `hz heinzel wake|chat|retry|show`, the web page and MCP show:

| spine code | HZE | what happened | retried |
|---|---|---|---|
| ``provider-unreachable`` | HZE013 | connection refused, no such host, connection broken | yes |
| ``provider-tls`` | HZE014 | the TLS handshake failed | no |
| ``provider-timeout`` | HZE015 | no answer within ``request_timeout`` | yes |
| ``provider-http-401``/``403`` | HZE016 | the provider refused the key | no |
| ``provider-http-404`` | HZE017 | no such model or endpoint | no |
| ``provider-http-429`` | HZE018 | rate limited | yes |
| ``provider-http-5xx`` | HZE019 | the provider failed | yes |
| ``provider-http-<other>`` | HZE010 | another HTTP error (400, 402, ...) | 408, 409 |
| ``reply-not-json`` | HZE020 | a 200 whose body is not JSON (an HTML page) | no |
| ``reply-malformed`` | HZE012 | JSON, but not the API's shape | no |
| ``reply-refused`` | HZE021 | the provider's content filter, or the model refused | no |

`fault_of` finds a fault in an exception (its chain of causes included), `describe` makes
its `EngineError`, and `SPINE_CODES` maps a spine code back to its HZE code (for
``hz system doctor``, which reads the last turns from the index). Nothing here imports
pydantic-ai at module level: the doctor uses the table at start-up.

`unpaid` says whether a failed request provably cost nothing, from its fault and what
`check_reply` saw of its replies (`Replies`, for the request `watching` watches): no reply
began (refused, TLS, no such host, a timeout or a broken connection before any byte, an
HTTP error), or each reply that began was read whole and carried no usage (no JSON, or
JSON of the wrong shape without ``usage``). A reply cut off mid-body, one that carried a
usage, or an unknown error may have been paid (docs/engine.md, "The reservation protocol").
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from heinzel.engine.errors import (
    INVALID_REPLY,
    KEY_REFUSED,
    MALFORMED_REPLY,
    NOT_FOUND,
    PROVIDER_FAILED,
    RATE_LIMITED,
    REPLY_NOT_JSON,
    REPLY_REFUSED,
    SERVER_FAILED,
    TIMED_OUT,
    TLS_FAILED,
    UNREACHABLE,
    EngineError,
)
from ledger.records import frozen_record, mutable_record

__all__ = [
    "INVALID_OUTCOME",
    "RETRYABLE_STATUS",
    "SPINE_CODES",
    "Fault",
    "NotJsonReply",
    "Replies",
    "WrongShapeReply",
    "check_reply",
    "code_of",
    "describe",
    "fault_of",
    "transient",
    "unpaid",
    "watching",
]

INVALID_OUTCOME = "invalid-outcome"
"""The spine code of a reply that never became a valid outcome (HZE011): the model
answered, so no provider fault."""

RETRYABLE_STATUS: frozenset[int] = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
"""The statuses worth asking again: timeouts, conflicts, rate limits, overload, 5xx."""

SPINE_CODES: dict[str, str] = {
    "provider-unreachable": UNREACHABLE,
    "provider-tls": TLS_FAILED,
    "provider-timeout": TIMED_OUT,
    "provider-http-401": KEY_REFUSED,
    "provider-http-403": KEY_REFUSED,
    "provider-http-404": NOT_FOUND,
    "provider-http-429": RATE_LIMITED,
    "reply-not-json": REPLY_NOT_JSON,
    "reply-malformed": MALFORMED_REPLY,
    "reply-refused": REPLY_REFUSED,
    INVALID_OUTCOME: INVALID_REPLY,
}
"""A failed turn's spine code -> its HZE code (``provider-http-5xx``: `code_of`)."""


class NotJsonReply(Exception):
    """A provider's 2xx reply whose body is not JSON (an HTML page, a proxy's login)."""


class WrongShapeReply(Exception):
    """A provider's reply that is JSON but not the API's shape (or no JSON where it streams)."""


@frozen_record
class Fault:
    """One provider failure: its spine code, whether asking again may help, and the
    detail for the message (an address, a status; never content)."""

    spine: str
    transient: bool
    detail: str = ""
    status: int | None = None

    @property
    def code(self) -> str:
        return code_of(self.spine)


def code_of(spine: str) -> str:
    """The HZE code of a failed turn's spine code (empty: not a provider fault)."""
    if spine in SPINE_CODES:
        return SPINE_CODES[spine]
    if spine.startswith("provider-http-5"):
        return SERVER_FAILED
    if spine.startswith("provider-http-"):
        return PROVIDER_FAILED
    return ""


def _chain(error: BaseException) -> list[BaseException]:
    found: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and all(current is not seen for seen in found):
        found.append(current)
        current = current.__cause__ or current.__context__
    return found


def _where(chain: list[BaseException]) -> str:
    """The address the failed request went to (scheme, host and port), when known."""
    for each in chain:
        request = getattr(each, "request", None)
        url = getattr(request, "url", None)
        if url is not None:
            scheme, host, port = getattr(url, "scheme", ""), getattr(url, "host", ""), None
            port = getattr(url, "port", None)
            return f"{scheme}://{host}" + (f":{port}" if port else "")
    return ""


def fault_of(error: BaseException) -> Fault | None:
    """The provider fault ``error`` is (or was caused by), None when it is none."""
    import socket
    import ssl

    from pydantic_ai.exceptions import (
        ContentFilterError,
        ModelAPIError,
        ModelConnectionError,
        ModelHTTPError,
        ModelRequestTimeout,
        ModelTimeoutError,
        UnexpectedModelBehavior,
    )

    chain = _chain(error)
    where = _where(chain)
    if any(isinstance(e, NotJsonReply) for e in chain):
        return Fault(
            "reply-not-json", False, str(next(e for e in chain if isinstance(e, NotJsonReply)))
        )
    if any(isinstance(e, WrongShapeReply) for e in chain):
        shape = next(e for e in chain if isinstance(e, WrongShapeReply))
        return Fault("reply-malformed", False, str(shape))
    if isinstance(error, (ModelTimeoutError, ModelRequestTimeout)):
        return Fault("provider-timeout", True, where)
    if isinstance(error, ModelConnectionError):
        if any(isinstance(e, ssl.SSLError) for e in chain):
            return Fault("provider-tls", False, where)
        if any(isinstance(e, socket.gaierror) for e in chain):
            return Fault("provider-unreachable", True, f"{where}: the host name does not resolve")
        if any(isinstance(e, ConnectionRefusedError) for e in chain):
            return Fault("provider-unreachable", True, f"{where}: the connection was refused")
        return Fault("provider-unreachable", True, f"{where}: the connection failed or broke off")
    if isinstance(error, ModelHTTPError):
        status = error.status_code
        return Fault(f"provider-http-{status}", status in RETRYABLE_STATUS, where, status)
    if isinstance(error, ContentFilterError):
        return Fault("reply-refused", False)
    if isinstance(error, UnexpectedModelBehavior):
        if str(error).startswith("Exceeded maximum output retries"):
            return None  # the model answered, the outcome never validated: HZE011
        if "expected JSON" in str(error) or "decode response as JSON" in str(error):
            return Fault("reply-not-json", False, str(error).splitlines()[0][:200])
        return Fault("reply-malformed", False, str(error).splitlines()[0][:200])
    if isinstance(error, ModelAPIError):
        text = str(error)
        if "JSON" in text:
            return Fault("reply-not-json", False, text.splitlines()[0][:200])
        return Fault("reply-malformed", False, text.splitlines()[0][:200])
    return None


@mutable_record
class Replies:
    """What came back for one model request (its attempts together), as `check_reply` saw."""

    open: int = 0
    """2xx replies that began and whose body was never read whole (cut off, or a stream of
    events): their usage is unknown."""
    usage: bool = False
    """A reply read whole carried a ``usage``: the provider may have billed it."""


_REPLIES: ContextVar[Replies | None] = ContextVar("hz_replies", default=None)


@contextmanager
def watching() -> Iterator[Replies]:
    """What `check_reply` sees of the replies to the requests made inside (one model
    request and its retries: the same task, so the same context)."""
    replies = Replies()
    token = _REPLIES.set(replies)
    try:
        yield replies
    finally:
        _REPLIES.reset(token)


def unpaid(error: BaseException, replies: Replies) -> bool:
    """Whether the request that failed with ``error`` provably cost nothing: a provider
    fault (not the content filter, whose reply is billed) and no reply whose usage is
    unknown or said something."""
    fault = fault_of(error)
    if fault is None or fault.spine == "reply-refused":
        return False
    return not replies.open and not replies.usage


def transient(error: BaseException) -> bool:
    """Whether asking the provider again may help (connection, timeout, 429, 5xx)."""
    fault = fault_of(error)
    return fault is not None and fault.transient


def _tries(attempts: int) -> str:
    return f"{attempts} attempt" + ("" if attempts == 1 else "s")


def describe(
    fault: Fault, *, model_name: str, attempts: int, name: str | None = None
) -> EngineError:
    """The coded error of ``fault`` for a turn of ``name`` (its hint names the command that
    goes on; None: no turn, as for the doctor), after ``attempts`` requests to ``model_name``."""
    retry = f"`hz heinzel retry {name}`" if name else "retry the turn"
    online = "`hz system doctor --online`"
    where = fault.detail or "the provider"
    spine = fault.spine
    texts: dict[str, tuple[str, str]] = {
        "provider-unreachable": (
            f"could not reach the model's provider ({where}), {_tries(attempts)}",
            f"start the model server or check base_url and the network ({online}), then {retry}",
        ),
        "provider-tls": (
            f"the TLS handshake with the model's provider failed ({where})",
            "check base_url's scheme (http:// for a local server) and the server's "
            f"certificate ({online}), then {retry}",
        ),
        "provider-timeout": (
            f"the model's provider did not answer in time ({where}), {_tries(attempts)}",
            "the server may be overloaded or hung: try again later with "
            f"{retry}, or raise `[heinzel] request_timeout`",
        ),
        "reply-not-json": (
            f"the provider's reply was not JSON for {model_name} ({where})",
            f"base_url answers with something else (a web page?): point it at the API ({online})",
        ),
        "reply-malformed": (
            f"the provider's reply was not its API's shape for {model_name}: {where}",
            f"check that base_url points at an Anthropic- or OpenAI-compatible endpoint ({online})",
        ),
        "reply-refused": (
            f"the provider's content filter stopped the reply of {model_name} "
            "(or the model refused)",
            f"look at the turn's inputs for what was flagged, then {retry} with a hint",
        ),
    }
    if spine in texts:
        message, hint = texts[spine]
        return EngineError(fault.code, message, hint)
    status = fault.status
    said = f"the provider answered HTTP {status} to {_tries(attempts)} for {model_name}"
    if status in (401, 403):
        fix = f"check the key: {online} says which one is used"
    elif status == 404:
        fix = f"check the model's name and base_url ({online})"
    elif status == 429:
        fix = f"the provider's rate limit: wait a while or raise it, then {retry}"
    elif status is not None and status in RETRYABLE_STATUS:
        fix = f"the provider is failing: try again later with {retry}"
    else:
        fix = f"check the model name and base_url: {online}"
    return EngineError(fault.code, said, fix)


def _streamed(request: Any) -> bool:
    """Whether ``request`` asked for a stream of server-sent events (``"stream": true``)."""
    import json

    try:
        return bool(json.loads(bytes(request.content or b"{}")).get("stream"))
    except (ValueError, AttributeError, TypeError):
        return False


async def check_reply(response: Any) -> None:
    """The HTTP client's response hook: a 2xx reply to a model request that is no JSON
    (`NotJsonReply`), or JSON where the request asked for a stream (`WrongShapeReply`).
    A stream of events passes unread; the provider's client reads the rest. What it saw
    goes to the `Replies` being watched (`watching`): whether the reply was read whole,
    whether it carried a usage."""
    import json

    if response.request.method != "POST" or not 200 <= response.status_code < 300:
        return
    replies = _REPLIES.get() or Replies()
    replies.open += 1  # until its body is read whole: a cut-off reply may be billed
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind == "text/event-stream":
        return
    body = await response.aread()
    replies.open -= 1
    try:
        reply = json.loads(body)
    except ValueError:
        raise NotJsonReply(f"{kind or 'no content type'}, {len(body)} bytes") from None
    replies.usage = replies.usage or (isinstance(reply, dict) and bool(reply.get("usage")))
    if _streamed(response.request):
        raise WrongShapeReply("one JSON body where the API streams events")
