"""Prices from genai-prices with overrides, and the caps of a turn and a day."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from pydantic_ai.usage import RequestUsage, RunUsage

from heinzel.engine import Budget, EngineError, Price, Pricing, turn_cap

AT = datetime(2026, 10, 30, tzinfo=UTC)
MILLION = RequestUsage(input_tokens=1_000_000, output_tokens=1_000_000)


class TestPricing:
    def test_a_known_model_is_priced_by_genai_prices(self) -> None:
        """claude-sonnet-4-5 costs its published 3 + 15 USD per million tokens (below tiers)."""
        usage = RequestUsage(input_tokens=1000, output_tokens=1000)
        assert Pricing(at=AT).cost("claude-sonnet-4-5", "anthropic", usage) == Decimal("0.018")

    def test_an_override_wins(self) -> None:
        """A [heinzel.prices] entry replaces the package's price."""
        pricing = Pricing(at=AT, overrides={"claude-sonnet-4-5": Price(Decimal(1), Decimal(2))})
        assert pricing.cost("claude-sonnet-4-5", "anthropic", MILLION) == Decimal(3)

    def test_cache_reads_have_their_own_rate(self) -> None:
        """Cached input tokens are charged at the cache-read rate."""
        price = Price(Decimal(10), Decimal(0), cache_read_mtok=Decimal(1))
        usage = RequestUsage(input_tokens=1_000_000, cache_read_tokens=500_000)
        assert price.cost(usage) == Decimal("5.5")

    def test_an_unknown_model_without_a_price_is_refused(self) -> None:
        """No known price and none set: HZE001 with the fix."""
        with pytest.raises(EngineError) as caught:
            Pricing(at=AT).require("my-gateway-model", None)
        assert caught.value.code == "HZE001"
        assert "[heinzel.prices]" in caught.value.hint

    def test_an_unknown_model_with_a_price_runs(self) -> None:
        """The same model runs once the user set a price."""
        Pricing(at=AT, overrides={"my-gateway-model": Price(Decimal(1), Decimal(1))}).require(
            "my-gateway-model", None
        )

    def test_the_offline_model_is_free(self) -> None:
        """offline needs no price and costs nothing."""
        assert Pricing(at=AT).cost("offline", "function", MILLION) == 0

    def test_a_negative_price_is_refused(self) -> None:
        """A negative price is HZE008."""
        with pytest.raises(EngineError, match=">= 0"):
            Price(Decimal(-1), Decimal(1))


class TestCaps:
    def test_the_turn_cap_is_the_lower_one(self) -> None:
        """The contract's max_usd and the settings' max_usd: the lower wins."""
        assert turn_cap(Decimal("0.5"), Decimal("0.2")) == Decimal("0.2")
        assert turn_cap(None, Decimal("0.2")) == Decimal("0.2")
        assert turn_cap(None, None) is None

    def test_the_day_cap_counts_what_others_spent(self) -> None:
        """With 0.9 of 1.0 spent today, a turn capped at 0.5 has 0.1 left."""
        budget = Budget(Pricing(at=AT), Decimal("0.5"), Decimal("1.0"), Decimal("0.9"))
        assert budget.remaining(Decimal(0)) == Decimal("0.1")

    def test_the_next_step_may_not_cross(self) -> None:
        """A next step estimated above what is left would cross; one below would not."""
        budget = Budget(Pricing(at=AT), Decimal("0.5"))
        assert budget.would_cross(Decimal("0.4"), Decimal("0.2"))
        assert not budget.would_cross(Decimal("0.2"), Decimal("0.2"))

    def test_a_spent_cap_refuses_to_start(self) -> None:
        """A day already spent refuses a new turn with HZE005."""
        budget = Budget(Pricing(at=AT), Decimal("0.5"), Decimal("1"), Decimal("1"))
        with pytest.raises(EngineError) as caught:
            budget.check_start()
        assert caught.value.code == "HZE005"

    def test_an_uncomputable_cost_counts_at_the_cap(self) -> None:
        """at_cap is everything the turn may still spend."""
        assert Budget(Pricing(at=AT), Decimal("0.5")).at_cap(Decimal("0.1")) == Decimal("0.5")

    def test_the_token_ceiling_follows_the_cap(self) -> None:
        """0.01 USD left at 1 USD per million tokens buys 10,000 tokens beyond those used."""
        pricing = Pricing(at=AT, overrides={"m": Price(Decimal(1), Decimal(1))})
        budget = Budget(pricing, Decimal("0.02"))
        used = RunUsage(input_tokens=300, output_tokens=200)
        assert budget.token_ceiling("m", None, Decimal("0.01"), used) == 10_500

    def test_no_cap_no_ceiling(self) -> None:
        """Without a cap (or with a free model) there is no token ceiling."""
        assert Budget(Pricing(at=AT)).token_ceiling("offline", None, Decimal(0), RunUsage()) is None


def test_a_free_model_reserves_without_sizing_its_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ``offline`` model's worst case is nothing whatever its request holds, so
    `CappedModel` never serialises the request to size it (issue 42: a wake's share)."""
    from pydantic_ai.messages import ModelRequest, UserPromptPart
    from pydantic_ai.models import ModelRequestParameters

    from heinzel.engine import capped
    from heinzel.engine.offline import offline_model

    def sized(*_: object) -> int:
        raise AssertionError("a free model's request was sized")

    monkeypatch.setattr(capped, "request_bytes", sized)
    model = capped.CappedModel(offline_model(), Pricing(at=datetime(2026, 1, 1, tzinfo=UTC)), None)  # type: ignore[arg-type]
    messages = [ModelRequest(parts=[UserPromptPart("hello")])]
    bounded = model._reserve(messages, None, ModelRequestParameters())
    assert bounded["max_tokens"] == capped.OUTPUT_TOKENS
    assert model.reserved is False


def test_a_paid_model_after_the_offline_one_is_priced_from_the_same_table() -> None:
    """The offline model defers genai-prices' table to its first lookup (its own turns
    look none up); a paid model's price in the same process is what the bundled table
    says, and the offline model's response carries no cost to look up."""
    import asyncio

    from genai_prices import data_snapshot
    from pydantic_ai.messages import ModelRequest, UserPromptPart
    from pydantic_ai.models import ModelRequestParameters

    from heinzel.engine.offline import offline_model

    before = data_snapshot._custom_snapshot
    try:
        data_snapshot.set_custom_snapshot(None)
        usage = RequestUsage(input_tokens=1_000_000, output_tokens=1_000_000)
        at = datetime(2026, 11, 6, tzinfo=UTC)
        bundled = Pricing(at=at).cost("gpt-4o", "openai", usage)
        model = offline_model()
        assert data_snapshot._custom_snapshot is not None  # deferred, not loaded
        response = asyncio.run(
            model.request(
                [ModelRequest(parts=[UserPromptPart("hello")])], None, ModelRequestParameters()
            )
        )
        assert response.usage.cost == Decimal(0)
        assert Pricing(at=at).cost("gpt-4o", "openai", usage) == bundled
        assert bundled is not None and bundled > 0
    finally:
        data_snapshot.set_custom_snapshot(before)
