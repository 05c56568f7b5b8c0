"""The engine's coded errors (``HZE0xx``): models, prices, caps, bodies, answers.

Every code is documented in ``docs/errors.md`` under "engine (HZE)". A failure of
the *model* (an outcome that never validated, a cap reached) is not an exception:
`heinzel.engine.run.think` returns it as a result, with the coded cause (HZE010 to
HZE022, `heinzel.engine.faults`) that the turn keeps and ``hz`` prints. These are the failures a
caller has to fix: configuration, a missing extra or key, a damaged body.
"""

from __future__ import annotations

from ledger.errors import HzError

__all__ = [
    "BAD_ANSWERS",
    "BAD_BODY",
    "BAD_SETTINGS",
    "BAD_TOOL_NAME",
    "CAP_EXHAUSTED",
    "CA_UNREADABLE",
    "INVALID_REPLY",
    "KEY_REFUSED",
    "MALFORMED_REPLY",
    "MISSING_EXTRA",
    "MISSING_KEY",
    "NOT_FOUND",
    "NO_PRICE",
    "PROVIDER_FAILED",
    "RATE_LIMITED",
    "REPLY_NOT_JSON",
    "REPLY_REFUSED",
    "SERVER_FAILED",
    "TIMED_OUT",
    "TLS_FAILED",
    "TURN_TIME_UP",
    "UNKNOWN_MODEL",
    "UNREACHABLE",
    "EngineError",
]

NO_PRICE = "HZE001"
MISSING_EXTRA = "HZE002"
MISSING_KEY = "HZE003"
UNKNOWN_MODEL = "HZE004"
CAP_EXHAUSTED = "HZE005"
BAD_BODY = "HZE006"
BAD_ANSWERS = "HZE007"
BAD_SETTINGS = "HZE008"
BAD_TOOL_NAME = "HZE009"
PROVIDER_FAILED = "HZE010"
"""The provider kept answering 429 or 5xx (or another HTTP error) until the retries ran out."""
INVALID_REPLY = "HZE011"
"""The model's reply never became a valid outcome, its validation retry included."""
MALFORMED_REPLY = "HZE012"
"""The provider's reply was not its API's shape (a gateway that only looks compatible)."""
UNREACHABLE = "HZE013"
"""The provider could not be reached: connection refused, no such host, a broken connection."""
TLS_FAILED = "HZE014"
"""The TLS handshake with the provider failed."""
TIMED_OUT = "HZE015"
"""The provider did not answer within ``[heinzel] request_timeout`` (each attempt)."""
KEY_REFUSED = "HZE016"
"""The provider refused the key (HTTP 401 or 403)."""
NOT_FOUND = "HZE017"
"""The provider has no such model or endpoint (HTTP 404)."""
RATE_LIMITED = "HZE018"
"""The provider's rate limit (HTTP 429) outlasted hz's retries."""
SERVER_FAILED = "HZE019"
"""The provider kept failing (HTTP 5xx) until hz's retries ran out."""
REPLY_NOT_JSON = "HZE020"
"""The provider's reply was not JSON (an HTML page: base_url is not the API)."""
REPLY_REFUSED = "HZE021"
"""The provider's content filter stopped the reply, or the model refused."""
TURN_TIME_UP = "HZE022"
"""The turn's time limit (the contract's ``timeout``) ran out while the model was asked."""
CA_UNREADABLE = "HZE023"
"""The CA certificates an ``https://`` provider is checked against could not be loaded."""


class EngineError(HzError):
    """A failure of the turn engine that the caller must fix (codes ``HZE0xx``)."""
