"""The adapters offer exactly what the static registry names, and Priya's contracts compile."""

from __future__ import annotations

from pathlib import Path

import pytest

from heinzel.capabilities.documents import LocalDocuments
from heinzel.capabilities.files import FilesCapability
from heinzel.capabilities.fixture_sources import fixture_sources
from heinzel.capabilities.git import GitCapability
from heinzel.capabilities.protocols import ReadCapability
from heinzel.capabilities.registry import DEFAULT_REGISTRY
from heinzel.contract import check_amendment, load_contract
from heinzel.errors import ContractError

PRIYA = Path(__file__).resolve().parents[2] / "fixtures" / "priya"
ADAPTERS: list[ReadCapability] = [
    FilesCapability(),
    GitCapability(),
    LocalDocuments("owner"),
    *fixture_sources(PRIYA).values(),
]


class TestRegistryAgreement:
    @pytest.mark.parametrize("adapter", ADAPTERS, ids=lambda a: a.name)
    def test_every_method_matches_the_registry(self, adapter: ReadCapability) -> None:
        """Same window flag, accepted args and required args as the registry's read method."""
        for name, spec in adapter.methods.items():
            method = DEFAULT_REGISTRY.method(adapter.name, name)
            assert method is not None, f"{adapter.name}.{name} is not in the registry"
            assert (method.mode, method.window, method.args, method.required) == (
                "read",
                spec.window,
                spec.args,
                spec.required,
            )


class TestPriyaContractsCompile:
    def test_v1_and_v2_compile_and_v2_widens(self) -> None:
        """Both versions compile; v2 from the user is accepted, from the Heinzelmännchen HZC050."""
        v1 = load_contract(PRIYA / "weekly-report.prose.md")
        v2 = load_contract(PRIYA / "weekly-report.v2.prose.md")
        assert sorted(v2.hz.inputs) == ["board", "calendar", "incidents", "merged_prs"]
        check_amendment(v1, v2, proposed_by="user")
        with pytest.raises(ContractError) as caught:
            check_amendment(v1, v2, proposed_by="heinzel")
        assert caught.value.code == "HZC050"
