"""The graph's pure parts (docs/graph.md): heights, cycles, filters by namespace, name,
alias, artifact and depth."""

from __future__ import annotations

from typing import Any

import pytest

from heinzel.errors import HeinzelError
from heinzel.session.graph import Filters, filter_graph, find_cycle, heights, source_ref


def node(i: str, namespace: str = "me", aliases: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"id": i, "kind": "heinzel", "name": i, "aliases": list(aliases), "namespace": namespace}


def art(ref: str) -> dict[str, Any]:
    return {"id": ref, "kind": "artifact", "name": ref}


def edge(source: str, target: str, kind: str) -> dict[str, Any]:
    return {"from": source, "to": target, "kind": kind, "mark": "declared"}


# a -> x -> b -> y -> c; t (team) reads y
GRAPH = {
    "schema": 1,
    "scope": "local",
    "nodes": [
        node("a"),
        node("b", aliases=("bee",)),
        node("c"),
        node("t", "team"),
        art("x"),
        art("y"),
    ],
    "edges": [
        edge("a", "x", "writes"),
        edge("x", "b", "reads"),
        edge("b", "y", "writes"),
        edge("y", "c", "reads"),
        edge("y", "t", "reads"),
    ],
}


def ids(graph: dict[str, Any]) -> set[str]:
    return {n["id"] for n in graph["nodes"]}


def test_heights_and_cycles() -> None:
    feeds = {"b": ["a"], "c": ["b"], "d": ["b", "c"], "a": ["a"]}
    assert heights(feeds, "abcd") == {"a": 0, "b": 1, "c": 2, "d": 3}
    assert find_cycle(feeds, "a") is None  # reading its own output is no loop
    assert find_cycle({**feeds, "a": ["d"]}, "a") in (
        ["a", "b", "d", "a"],
        ["a", "b", "c", "d", "a"],
    )


def test_source_refs() -> None:
    assert source_ref("tracker", "issues_updated", {"project": "CHK"}) == (
        "tracker.issues_updated?project=CHK"
    )
    assert source_ref("documents", "read", {"doc": "file:/r.md"}) == "file:/r.md"
    assert source_ref("chat", "messages", {"ch": ["a", "b"], "all": True}) == (
        "chat.messages?all=true&ch=a,b"
    )


def test_filters() -> None:
    assert ids(filter_graph(GRAPH, Filters())) == ids(GRAPH)
    assert ids(filter_graph(GRAPH, Filters(namespace="team"))) == {"t", "y"}
    assert ids(filter_graph(GRAPH, Filters(names=("bee",), depth=1))) == {"b", "x", "y"}
    assert ids(filter_graph(GRAPH, Filters(names=("bee",), depth=2))) == {
        "a",
        "b",
        "c",
        "t",
        "x",
        "y",
    }
    assert ids(filter_graph(GRAPH, Filters(artifacts=(("nope", "x"),), depth=0))) == {"x"}
    assert ids(filter_graph(GRAPH, Filters(names=("c",), namespace="me"))) == {
        "a",
        "b",
        "c",
        "x",
        "y",
    }
    for filters, code in (
        (Filters(depth=1), "HZH380"),
        (Filters(names=("a",), depth=-1), "HZH380"),
        (Filters(names=("nobody",)), "HZH381"),
        (Filters(artifacts=(("doc:z",),)), "HZH382"),
    ):
        with pytest.raises(HeinzelError) as refused:
            filter_graph(GRAPH, filters)
        assert refused.value.code == code
