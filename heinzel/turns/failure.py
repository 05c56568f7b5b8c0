"""Why a turn failed, in the user's words: the underlying coded error, kept in the turn's body.

The spine keeps codes only (``effect.failed{error: HZH131}``, ``turn.finished{error:
HZM021}``); the machine's own code says *that* a step failed, not *why*. The host's steps
note the deepest coded error under what a step raised (`root_cause`), and the host keeps it
in the turn's body as ``{"failure": {code, message, hint}}`` (`keep_failure`), so `hz
heinzel wake`, `chat`, `resume` and `answer` print the cause's code, message and hint, and
`show` can too, after the process that ran the turn is gone.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

from heinzel.errors import HeinzelError
from heinzel.session.causes import cause_of
from heinzel.strings.usd import usd_text
from heinzel.turns.record import SessionBody
from ledger.errors import HzError
from machines.stores.journal import content_hash

if TYPE_CHECKING:
    from heinzel.engine.money import Budget

__all__ = ["ENDED_BADLY", "cause_of", "keep_failure", "refusal", "root_cause"]

ENDED_BADLY = frozenset({"failed", "abandoned"})
"""The ends of a turn a command reports with exit status 1."""


def root_cause(error: BaseException) -> HzError | None:
    """The deepest coded error in ``error``'s chain of causes (None: none is coded)."""
    found = error if isinstance(error, HzError) else None
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, HzError):
            found = current
        current = current.__cause__ or current.__context__
    return found


def keep_failure(body: SessionBody, turn: str, error: HzError) -> None:
    """Keep ``error`` as the turn's cause in its body (once per turn and error)."""
    value = {"failure": {"code": error.code, "message": error.message, "hint": error.hint}}
    body.put(turn, content_hash(value), value)


def refusal(name: str, budget: Budget, usd: Decimal, turn: Decimal, day: Decimal) -> HeinzelError:
    """HZH331: the cap that refused the next model request, with the figures."""
    worst = usd_text(float(usd))
    if budget.turn_usd is not None and turn + usd > budget.turn_usd:
        spent, cap = usd_text(float(turn)), usd_text(float(budget.turn_usd))
        return HeinzelError(
            "HZH331",
            f"the next model request could cost {worst} USD, over the turn's cap "
            f"({spent} of {cap} USD spent); it was not sent",
            "raise the contract's agent.max_usd (or [heinzel] max_usd), then "
            f"`hz heinzel retry {name}`",
        )
    spent, cap = usd_text(float(day)), usd_text(float(budget.day_usd or 0))
    return HeinzelError(
        "HZH331",
        f"the next model request could cost {worst} USD, over the day's cap "
        f"({spent} of {cap} USD spent today); it was not sent",
        "wait for tomorrow (UTC), or raise [heinzel] max_usd_per_day",
    )
