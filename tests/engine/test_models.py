"""Models by configuration: strings to pydantic-ai models, or coded errors with the fix."""

from __future__ import annotations

import sys

import pytest
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel

from heinzel.engine import EngineError, ModelChoice, choose_model, resolve_model


class TestResolveModel:
    def test_offline_is_hz_own_model(self) -> None:
        """ "offline" is the deterministic FunctionModel named offline."""
        model = resolve_model("offline")
        assert isinstance(model, FunctionModel) and model.model_name == "offline"

    @pytest.mark.parametrize(
        ("name", "cls"),
        [
            ("anthropic:claude-sonnet-4-5", AnthropicModel),
            ("openai:gpt-4o", OpenAIResponsesModel),
            ("openai-chat:gpt-4o", OpenAIChatModel),
        ],
    )
    def test_provider_strings(self, name: str, cls: type) -> None:
        """Each prefix gives its pydantic-ai model class."""
        assert isinstance(resolve_model(name, api_key="sk-test"), cls)

    def test_base_url_points_at_a_gateway(self) -> None:
        """base_url reaches the provider's client."""
        model = resolve_model("openai-chat:gw", api_key="k", base_url="http://127.0.0.1:9/v1")
        assert isinstance(model, OpenAIChatModel)
        assert str(model.client.base_url) == "http://127.0.0.1:9/v1/"

    def test_the_key_comes_from_the_environment(self) -> None:
        """The key variable of the provider is read from the env mapping given."""
        resolve_model("anthropic:claude-sonnet-4-5", env={"ANTHROPIC_API_KEY": "sk-env"})

    def test_a_missing_key_is_named(self) -> None:
        """No key: HZE003 naming the variable."""
        with pytest.raises(EngineError) as caught:
            resolve_model("anthropic:claude-sonnet-4-5", env={})
        assert (caught.value.code, "ANTHROPIC_API_KEY" in caught.value.hint) == ("HZE003", True)

    def test_an_unknown_prefix_is_refused(self) -> None:
        """A model string hz can't run: HZE004."""
        with pytest.raises(EngineError) as caught:
            resolve_model("gemini:pro", api_key="k")
        assert caught.value.code == "HZE004"

    def test_a_missing_extra_is_named(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Without the anthropic extra installed: HZE002 naming heinzel[anthropic]."""
        monkeypatch.setitem(sys.modules, "pydantic_ai.models.anthropic", None)
        with pytest.raises(EngineError) as caught:
            resolve_model("anthropic:claude-sonnet-4-5", api_key="k")
        assert caught.value.code == "HZE002"
        assert "heinzel[anthropic]" in caught.value.hint


class TestChooseModel:
    choice = ModelChoice(
        model="anthropic:claude-sonnet-4-5",
        model_fast="anthropic:haiku",
        classes={"best": "anthropic:opus"},
    )

    def test_approval_and_summary_turns_use_the_fast_model(self) -> None:
        """Approval turns and summary turns run on model_fast."""
        assert choose_model(self.choice, "approval") == "anthropic:haiku"
        assert choose_model(self.choice, "schedule", summary=True) == "anthropic:haiku"

    def test_a_class_hint_maps_through_configuration(self) -> None:
        """model_class best maps to the configured model; standard is the default."""
        assert choose_model(self.choice, "schedule", "best") == "anthropic:opus"
        assert choose_model(self.choice, "schedule") == "anthropic:claude-sonnet-4-5"
