"""A scan of the tick's code: every call into an adapter (a source's fetch, a draft's
state, the staging itself) runs under `heinzel.tick.isolate.isolated`, lexically or
through a function that is only ever called under it; so one source's or one
Heinzelmännchen's failure can never stop the tick for the others (ADR 0049, statement 20)."""

from __future__ import annotations

import ast
from pathlib import Path

TICK = Path(__file__).resolve().parents[2] / "heinzel" / "tick"
ADAPTER_CALLS = {"fetch", "fetch_once", "draft_state", "probe", "stage", "_stage"}
"""What reaches an adapter: its methods, and the functions that fetch sources."""


def _name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _under_isolated(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.With) and any(
            isinstance(item.context_expr, ast.Call) and _name(item.context_expr) == "isolated"
            for item in node.items
        ):
            return True
    return False


def _function(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> str | None:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.FunctionDef):
            return node.name
    return None


def uncovered() -> list[str]:
    """``file:line name`` of each adapter call not under `isolated`."""
    calls: list[tuple[str, ast.Call, dict[ast.AST, ast.AST]]] = []
    for path in sorted(TICK.glob("*.py")):
        tree = ast.parse(path.read_text("utf-8"))
        parents = _parents(tree)
        calls += [(path.name, n, parents) for n in ast.walk(tree) if isinstance(n, ast.Call)]

    def covered(call: ast.Call, parents: dict[ast.AST, ast.AST], seen: frozenset[str]) -> bool:
        if _under_isolated(call, parents):
            return True
        function = _function(call, parents)
        if function is None or function in seen:
            return False
        callers = [(c, p) for _, c, p in calls if _name(c) == function]
        return bool(callers) and all(covered(c, p, seen | {function}) for c, p in callers)

    return [
        f"{name}:{call.lineno} {_name(call)}"
        for name, call, parents in calls
        if _name(call) in ADAPTER_CALLS and not covered(call, parents, frozenset())
    ]


def test_every_adapter_call_of_the_tick_is_isolated() -> None:
    assert uncovered() == []


def test_the_scan_finds_the_staging_and_the_draft_states() -> None:
    """The scan is not empty: it sees `_stage`, `fetch_once` and the draft states."""
    seen = set()
    for path in sorted(TICK.glob("*.py")):
        seen |= {
            _name(n)
            for n in ast.walk(ast.parse(path.read_text("utf-8")))
            if isinstance(n, ast.Call)
        }
    assert {"_stage", "fetch_once", "draft_state"} <= seen
