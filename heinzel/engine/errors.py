"""The engine's coded errors (``HZE0xx``): models, prices, caps, bodies, answers.

Every code is documented in ``docs/errors.md`` under "engine (HZE)". A failure of
the *model* (an outcome that never validated, a cap reached) is not an error:
`heinzel.engine.run.think` returns it as a result. These are the failures a
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
    "MISSING_EXTRA",
    "MISSING_KEY",
    "NO_PRICE",
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


class EngineError(HzError):
    """A failure of the turn engine that the caller must fix (codes ``HZE0xx``)."""
