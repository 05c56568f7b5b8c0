"""The engine's tests never reach a real model: FunctionModel and TestModel only."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pydantic_ai.models
import pytest

from heinzel.engine import Budget, InputSpec, Price, Pricing, TurnSpec

pydantic_ai.models.ALLOW_MODEL_REQUESTS = False

AT = datetime(2026, 10, 30, 15, 0, tzinfo=UTC)
DONE = "every item of `merged_prs` is covered"
BODY = f"### Goal\n- `section`: this week's section\n\n### Done when\n- {DONE}\n"
INPUTS = (
    InputSpec(
        "merged_prs",
        '[{"title": "Fix the checkout bug"}, {"title": "Add PayPal"}]',
        "code-host.merged_pull_requests",
    ),
    InputSpec("issues", "- CHK-1 done\n- CHK-2 open", "tracker.issues_updated"),
    InputSpec("events", "- Mon: planning", "calendar.events"),
)


def make_spec(**changes: Any) -> TurnSpec:
    """The weekly-report turn of ADR 0049's worked example, with ``changes``."""
    fields: dict[str, Any] = {
        "turn": "01JTURN0000000000000000001",
        "cause": "schedule",
        "contract_name": "weekly-report",
        "contract_version": 1,
        "body": BODY,
        "started_at": AT,
        "inputs": INPUTS,
        "outputs": ("section",),
        "done_when": (DONE,),
        "max_usd": Decimal("0.5"),
    }
    fields.update(changes)
    return TurnSpec(**fields)


def make_budget(
    turn_usd: str | None = "0.5",
    *,
    prices: dict[str, Price] | None = None,
    day_usd: str | None = None,
    spent_today: str = "0",
) -> Budget:
    """A budget with ``function``/``test`` models priced at 1 USD per million tokens."""
    one = Price(Decimal(1), Decimal(1))
    overrides = {"function": one, "test": one, **(prices or {})}
    return Budget(
        Pricing(at=AT, overrides=overrides),
        turn_usd=Decimal(turn_usd) if turn_usd else None,
        day_usd=Decimal(day_usd) if day_usd else None,
        spent_today=Decimal(spent_today),
    )


@pytest.fixture
def spec() -> Callable[..., TurnSpec]:
    """A factory of turn specs."""
    return make_spec


@pytest.fixture
def budget() -> Callable[..., Budget]:
    """A factory of budgets."""
    return make_budget
