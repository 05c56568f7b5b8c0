"""The static registry of capabilities a contract may name, and their methods.

A contract's ``requires`` lists ``capability:mode``; its inputs read ``capability.method``
and its ``publishes`` name write methods. The compiler checks every such name against this
table. The table is data: a capability is added by adding a `Capability` to `CAPABILITIES`
(or, for a plugin, by passing an extended registry to the compiler); real adapters are
plugged in behind these names by the tick.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import field
from types import MappingProxyType
from typing import Literal

from ledger.records import frozen_record

__all__ = [
    "CAPABILITIES",
    "DEFAULT_REGISTRY",
    "Capability",
    "Method",
    "Mode",
    "Registry",
]

Mode = Literal["read", "write"]


@frozen_record
class Method:
    """One method of a capability: its mode, whether it searches a time window, its args.

    ``args`` names every argument the method accepts; ``required`` those it needs.
    """

    name: str
    mode: Mode
    window: bool = False
    args: frozenset[str] = frozenset()
    required: frozenset[str] = frozenset()


@frozen_record
class Capability:
    """A capability (``code-host``, ``documents``...) and its methods by name."""

    name: str
    methods: Mapping[str, Method] = field(default_factory=dict)

    def modes(self) -> frozenset[str]:
        """The modes ``requires`` may grant for this capability."""
        return frozenset(m.mode for m in self.methods.values())


def _cap(name: str, *methods: Method) -> Capability:
    return Capability(name, MappingProxyType({m.name: m for m in methods}))


def _args(*names: str) -> frozenset[str]:
    return frozenset(names)


CAPABILITIES: tuple[Capability, ...] = (
    _cap(
        "code-host",
        Method("merged_pull_requests", "read", True, _args("repo", "base"), _args("repo")),
        Method("merged_commits", "read", True, _args("repo", "branch"), _args("repo")),
        Method("issues", "read", True, _args("repo", "labels", "state"), _args("repo")),
    ),
    _cap(
        "tracker",
        Method("issues_updated", "read", True, _args("project", "board", "query")),
    ),
    _cap("calendar", Method("events", "read", True, _args("calendar", "query"))),
    _cap("chat", Method("messages", "read", True, _args("channel", "query"), _args("channel"))),
    _cap("files", Method("read", "read", False, _args("path"), _args("path"))),
    _cap(
        "git",
        Method("merged_commits", "read", True, _args("repo", "branch"), _args("repo")),
        Method("merged_pull_requests", "read", True, _args("repo", "branch"), _args("repo")),
    ),
    _cap(
        "documents",
        Method("read", "read", False, _args("doc"), _args("doc")),
        Method("place_draft", "write", False, _args("doc")),
    ),
)


class Registry:
    """Capabilities by name, with the look-ups the compiler needs."""

    def __init__(self, capabilities: Iterable[Capability]) -> None:
        self._by_name: dict[str, Capability] = {c.name: c for c in capabilities}

    def names(self) -> list[str]:
        """Every capability name, sorted."""
        return sorted(self._by_name)

    def capability(self, name: str) -> Capability | None:
        """The capability called ``name``, or None."""
        return self._by_name.get(name)

    def method(self, capability: str, method: str) -> Method | None:
        """The method ``capability.method``, or None when either is unknown."""
        cap = self._by_name.get(capability)
        return None if cap is None else cap.methods.get(method)

    def extended(self, *capabilities: Capability) -> Registry:
        """A new registry with ``capabilities`` added (or replacing same-named ones)."""
        return Registry([*self._by_name.values(), *capabilities])


DEFAULT_REGISTRY = Registry(CAPABILITIES)
