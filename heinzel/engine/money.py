"""Prices and caps: what a request costs and how much a turn may still spend.

Prices come from the `genai-prices` package pydantic-ai depends on, overridable
per model by ``[heinzel.prices]`` (USD per million tokens). A model with no known
price runs only when the user set one (`Pricing.require`, HZE001). The caps:
per turn the lower of the contract's ``agent.max_usd`` and ``[heinzel] max_usd``,
per day ``[heinzel] max_usd_per_day`` across every Heinzelmännchen (the host
passes what was spent today). `Budget` answers the engine's questions:
would the next step cross a cap, does a request's worst case still fit
(`Budget.admits`), and what token ceiling stops a step from inside
(``UsageLimits``). `Purse` reserves each model request's worst case before it is
sent (docs/engine.md, "The reservation protocol").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import field
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from heinzel.engine.errors import BAD_SETTINGS, CAP_EXHAUSTED, NO_PRICE, EngineError
from ledger.records import frozen_record, mutable_record

if TYPE_CHECKING:  # pydantic-ai and genai-prices load when a price is first asked
    from pydantic_ai.usage import RequestUsage, RunUsage

__all__ = ["FREE_MODELS", "Budget", "Price", "Pricing", "Purse", "turn_cap"]

FREE_MODELS = frozenset({"offline"})
"""Models that cost nothing and need no price: hz's own deterministic model."""

_MILLION = Decimal(1_000_000)


@frozen_record
class Price:
    """A user-set price in USD per million tokens."""

    input_mtok: Decimal
    output_mtok: Decimal
    cache_read_mtok: Decimal | None = None
    cache_write_mtok: Decimal | None = None

    def __post_init__(self) -> None:
        for value in (
            self.input_mtok,
            self.output_mtok,
            self.cache_read_mtok,
            self.cache_write_mtok,
        ):
            if value is not None and (not value.is_finite() or value < 0):
                raise EngineError(
                    BAD_SETTINGS,
                    f"a price must be a number >= 0, not {value}",
                    "fix [heinzel.prices] in hz.toml",
                )

    def cost(self, usage: RequestUsage | RunUsage) -> Decimal:
        """USD for ``usage`` at this price (cache reads and writes at their own rates)."""
        read = self.cache_read_mtok if self.cache_read_mtok is not None else self.input_mtok
        write = self.cache_write_mtok if self.cache_write_mtok is not None else self.input_mtok
        plain = usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens
        total = (
            max(plain, 0) * self.input_mtok
            + usage.cache_read_tokens * read
            + usage.cache_write_tokens * write
            + usage.output_tokens * self.output_mtok
        )
        return total / _MILLION


@frozen_record
class Pricing:
    """Prices for models: the user's overrides first, then genai-prices as of ``at``."""

    at: datetime
    overrides: Mapping[str, Price] = field(default_factory=dict)

    def _known(self, model: str, provider: str | None) -> Price | None:
        if model in FREE_MODELS:
            return Price(Decimal(0), Decimal(0))
        for name in (f"{provider}:{model}" if provider else None, model):
            if name and name in self.overrides:
                return self.overrides[name]
        return None

    def cost(self, model: str, provider: str | None, usage: RequestUsage) -> Decimal | None:
        """USD for one request, or None when no price is known."""
        price = self._known(model, provider)
        if price is not None:
            return price.cost(usage)
        import genai_prices

        try:
            calc = genai_prices.calc_price(
                genai_prices.Usage(
                    input_tokens=usage.input_tokens,
                    output_tokens=usage.output_tokens,
                    cache_read_tokens=usage.cache_read_tokens,
                    cache_write_tokens=usage.cache_write_tokens,
                ),
                model,
                provider_id=provider,
                genai_request_timestamp=self.at,
            )
        except LookupError:
            return None
        return Decimal(calc.total_price)

    def require(self, model: str, provider: str | None) -> None:
        """Refuse a model whose price is unknown and not set by the user (HZE001)."""
        from pydantic_ai.usage import RequestUsage

        if self.cost(model, provider, RequestUsage(input_tokens=1)) is None:
            raise EngineError(
                NO_PRICE,
                f"no price is known for the model {model!r}",
                f'set one in your config file: [heinzel.prices] "{model}" = '
                "{input = 3.0, output = 15.0}",
            )

    def worst(
        self, model: str, provider: str | None, input_tokens: int, output_tokens: int
    ) -> Decimal | None:
        """USD for a request of at most ``input_tokens`` in and ``output_tokens`` out
        (None when no price is known)."""
        from pydantic_ai.usage import RequestUsage

        usage = RequestUsage(input_tokens=input_tokens, output_tokens=output_tokens)
        return self.cost(model, provider, usage)

    def max_per_token(self, model: str, provider: str | None) -> Decimal:
        """The highest USD per token the model charges (the output rate, usually)."""
        from pydantic_ai.usage import RequestUsage

        million = self.cost(model, provider, RequestUsage(output_tokens=1_000_000))
        million_in = self.cost(model, provider, RequestUsage(input_tokens=1_000_000))
        top = max(million or Decimal(0), million_in or Decimal(0))
        return top / _MILLION


def turn_cap(contract_max_usd: Decimal | None, settings_max_usd: Decimal | None) -> Decimal | None:
    """The per-turn cap: the lower of the contract's and the settings' (None when neither)."""
    caps = [c for c in (contract_max_usd, settings_max_usd) if c is not None]
    return min(caps) if caps else None


@frozen_record
class Budget:
    """The money one turn may spend: its cap, and what the day still allows.

    ``spent_today`` is what every Heinzelmännchen spent today before this turn
    (turn.finished costs and ``usage`` events, from the index).
    """

    pricing: Pricing
    turn_usd: Decimal | None = None
    day_usd: Decimal | None = None
    spent_today: Decimal = Decimal(0)

    def remaining(self, spent_turn: Decimal) -> Decimal | None:
        """USD this turn may still spend (None: no cap)."""
        left = [
            cap - spent
            for cap, spent in (
                (self.turn_usd, spent_turn),
                (self.day_usd, self.spent_today + spent_turn),
            )
            if cap is not None
        ]
        return min(left) if left else None

    def check_start(self) -> None:
        """Refuse to start a turn when a cap is already reached (HZE005)."""
        left = self.remaining(Decimal(0))
        if left is not None and left <= 0:
            raise EngineError(
                CAP_EXHAUSTED,
                "the spending cap is reached before the turn started",
                "wait for tomorrow or raise [heinzel] max_usd_per_day",
            )

    def would_cross(self, spent_turn: Decimal, next_step: Decimal) -> bool:
        """True when a next step costing ``next_step`` would cross a cap."""
        left = self.remaining(spent_turn)
        return left is not None and (left <= 0 or next_step > left)

    def admits(self, usd: Decimal, spent_turn: Decimal, spent_day: Decimal) -> bool:
        """Whether a request whose worst case is ``usd`` stays within the turn's cap (this
        turn spent ``spent_turn``) and the day's (the home spent ``spent_day``, this turn
        included)."""
        if self.turn_usd is not None and spent_turn + usd > self.turn_usd:
            return False
        return self.day_usd is None or spent_day + usd <= self.day_usd

    def at_cap(self, spent_turn: Decimal) -> Decimal:
        """What a cost hz cannot compute counts as: everything left under the cap."""
        left = self.remaining(spent_turn)
        return spent_turn + left if left is not None and left > 0 else spent_turn

    def token_ceiling(
        self, model: str, provider: str | None, spent_turn: Decimal, used: RunUsage
    ) -> int | None:
        """The total-token limit for ``UsageLimits``: tokens used so far plus what the cap buys."""
        left = self.remaining(spent_turn)
        per_token = self.pricing.max_per_token(model, provider)
        if left is None or per_token <= 0:
            return None
        return used.total_tokens + max(math.floor(max(left, Decimal(0)) / per_token), 1)


Hold = Callable[[], AbstractContextManager[Decimal]]
"""Holds the home's spend lock while entered and gives the day's spend so far (every
turn's requests and open reservations, this turn's included)."""


@mutable_record
class Purse:
    """Reserves each model request's worst case against the caps before it is sent.

    ``reserve`` reads the day's spend and writes ``model.reserved{usd}`` (durable, through
    ``write``) under ``hold`` (the home's lock: two turns can't both pass on each other's
    zero), or refuses; the request's ``model.request`` settles the reservation, and
    ``release`` lets it go when the provider refused the request (``model.released``).
    Without ``hold`` (an engine run with no home) the day is ``budget.spent_today`` plus
    this turn's spend.
    """

    budget: Budget
    spent_turn: Callable[[], Decimal]
    """The turn's spend so far (its requests and unsettled reservations)."""
    write: Callable[[str, Mapping[str, Any]], None] | None = None
    """Appends a durable spine line of the turn (the recorder's ``checkpoint``); None: an
    engine run with no spine, whose reservations live only in this process."""
    hold: Hold | None = None
    refused: tuple[Decimal, Decimal, Decimal] | None = None
    """The last refusal: the request's worst case, the turn's and the day's spend."""

    def reserve(self, usd: Decimal) -> bool:
        """Reserve ``usd`` for the next request; False when a cap refuses it."""
        turn = self.spent_turn()
        held = self.hold() if self.hold is not None else nullcontext(self.budget.spent_today + turn)
        with held as day:
            if not self.budget.admits(usd, turn, day):
                self.refused = (usd, turn, day)
                return False
            if self.write is not None:
                self.write("model.reserved", {"usd": float(usd)})
        return True

    def release(self) -> None:
        """The reserved request cost nothing: the provider refused it."""
        if self.write is not None:
            self.write("model.released", {})
