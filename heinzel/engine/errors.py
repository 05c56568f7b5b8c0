"""The engine's coded errors (``HZE0xx``): models, prices, caps, bodies, answers.

Every code is documented in ``docs/errors.md`` under "engine (HZE)". A failure of
the *model* (an outcome that never validated, a cap reached) is not an exception:
`heinzel.engine.run.think` returns it as a result, with the coded cause (HZE010 to
HZE012) that the turn keeps and ``hz`` prints. These are the failures a
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
    "INVALID_REPLY",
    "MALFORMED_REPLY",
    "MISSING_EXTRA",
    "MISSING_KEY",
    "NO_PRICE",
    "PROVIDER_FAILED",
    "UNKNOWN_MODEL",
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


class EngineError(HzError):
    """A failure of the turn engine that the caller must fix (codes ``HZE0xx``)."""
