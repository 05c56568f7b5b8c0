"""One broken Heinzelmännchen never stops the tick for the others.

The tick runs each Heinzelmännchen's part (its drafts' states, its inbox, its wakes)
inside `isolated`: whatever that part raises is recorded in the tick's report with a
code and logged, and the tick goes on with the next one. A coded error keeps its code
(a missing contract file is HZH061, a changed one HZH062, a linked contract folder
HZH063); a damaged spine line (HZL030) is contained first: the spine is opened, which
moves a garbage last line aside like a torn tail (``spine.torn_tail``), and verified,
which records a break in the middle as ``spine.break_contained``; anything uncoded is
HZH221, naming the exception's type, never a traceback. The same code for the same
Heinzelmännchen is reported once per tick (the daily discovery and the wakes both read the
contract file, say). The tick's parts that are no one's (the staging of every source,
``sources``; the source cache's pruning) are isolated the same way under their name (a
full disk while staging is the write's HZL002 in the report, and the tick goes on).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from heinzel.ids import is_id
from heinzel.logs import bind_heinzel, get_logger
from heinzel.session.sessions import Sessions
from ledger.errors import HzError

__all__ = ["isolated"]


@contextmanager
def isolated(
    sessions: Sessions, heinzel_id: str, errors: list[dict[str, Any]], part: str
) -> Iterator[None]:
    """Run one Heinzelmännchen's ``part`` of the tick; a failure is recorded in
    ``errors`` (id, part, code, message) and logged, never raised."""
    try:
        yield
    except HzError as error:
        if error.code == "HZL030":
            _contain(sessions, heinzel_id)
        _record(heinzel_id, errors, part, error.code, error.message, hint=error.hint)
    except Exception as error:  # the tick must go on for the others
        message = f"{part} failed unexpectedly: {type(error).__name__}: {str(error)[:200]}"
        hint = "a bug in hz: report it with the `errors` of `hz system daemon tick --json`"
        _record(heinzel_id, errors, part, "HZH221", message, hint=hint)


def _record(
    heinzel_id: str,
    errors: list[dict[str, Any]],
    part: str,
    code: str,
    message: str,
    *,
    hint: str = "",
) -> None:
    if any(e.get("id") == heinzel_id and e.get("code") == code for e in errors):
        return  # one broken file is one error in the report, whichever parts met it
    found = {"id": heinzel_id, "part": part, "code": code, "message": message}
    errors.append({**found, "hint": hint} if hint else found)
    log = get_logger()
    # a part of the tick that is no one Heinzelmännchen's ("sources", "source-cache") is
    # logged under its name: binding it as an id would raise HZH003 over the real code
    log = bind_heinzel(log, heinzel_id) if is_id(heinzel_id) else log.bind(scope=heinzel_id)
    log.warning("tick.isolated", part=part, code=code)


def _contain(sessions: Sessions, heinzel_id: str) -> None:
    """Open the damaged spine (its garbage tail moved aside) and record its breaks."""
    try:
        with sessions.open_spine(heinzel_id) as spine:
            spine.verify()
    except HzError:
        return  # still reported by the caller; the next tick tries again
