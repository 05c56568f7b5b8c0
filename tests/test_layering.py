"""The arrows of docs/architecture.md: ledger <- machines <- heinzel, and the layers inside
heinzel, one way, with no circle."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OURS = {"ledger", "machines", "heinzel"}
ALLOWED = {"ledger": set(), "machines": {"ledger"}, "heinzel": {"ledger", "machines"}}
VENDOR_SDKS = {"anthropic", "openai", "claude_agent_sdk"}

# The layers inside heinzel, top to bottom. A module may import its own unit and the
# units of the layers below its own; never a layer above, never another unit of its own
# layer. The base modules form one unit.
LAYERS: list[tuple[str, list[str]]] = [
    ("command line", ["heinzel.cli"]),  # and heinzel.__main__; it launches the other surfaces
    ("surfaces", ["heinzel.web", "heinzel.mcp"]),
    ("application", ["heinzel.app"]),
    ("operations", ["heinzel.service", "heinzel.turns", "heinzel.tick", "heinzel.team"]),
    ("sessions", ["heinzel.session"]),
    ("index", ["heinzel.index"]),
    ("store", ["heinzel.store"]),
    ("configuration", ["heinzel.config"]),
    ("configuration's models", ["heinzel.config_models"]),  # loaded only to coerce or refuse
    ("contracts", ["heinzel.contract"]),
    ("engine and adapters", ["heinzel.engine", "heinzel.capabilities", "heinzel.runners"]),
    ("base", ["heinzel.base"]),
]
BASE = {
    "heinzel",
    "heinzel.clock",
    "heinzel.errors",
    "heinzel.fingerprint",
    "heinzel.ids",
    "heinzel.logs",
    "heinzel.strings.scrub",
    "heinzel.strings.text",
    "heinzel.strings.usd",
    "heinzel.vocabulary",
}


def imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def heinzel_imports(path: Path, known: set[str]) -> set[str]:
    """The heinzel modules ``path`` imports, anywhere in it (function bodies and
    TYPE_CHECKING blocks too): ``from a import b`` names ``a.b`` when that is a module."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "heinzel")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] != "heinzel":
                continue
            subs = {f"{node.module}.{a.name}" for a in node.names} & known
            found.update(subs or {node.module})
    return found


def unit_of(module: str) -> tuple[int, str]:
    """The (layer rank, unit) of a heinzel module: rank 0 is the top."""
    if module == "heinzel.__main__":
        module = "heinzel.cli"
    if module in BASE:
        return len(LAYERS) - 1, "heinzel.base"
    for rank, (_, units) in enumerate(LAYERS):
        for unit in units:
            if module == unit or module.startswith(unit + "."):
                return rank, unit
    raise AssertionError(f"{module} is in no layer of tests/test_layering.py")


def graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in modules("heinzel")}
    known = set(paths)
    return {name: heinzel_imports(path, known) - {name} for name, path in paths.items()}


def upward(edges: dict[str, set[str]]) -> list[str]:
    offences = []
    for source, targets in sorted(edges.items()):
        rank, unit = unit_of(source)
        for target in sorted(targets):
            their_rank, their_unit = unit_of(target)
            if their_unit != unit and their_rank <= rank:
                offences.append(f"{source} imports {target}")
    return offences


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected set of two or more modules (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_each_package_imports_only_what_it_may() -> None:
    """ledger imports nothing of ours, machines only ledger, heinzel both."""
    offences = []
    for package, allowed in ALLOWED.items():
        for path in modules(package):
            for root in imported_roots(path) & OURS - {package} - allowed:
                offences.append(f"{path.relative_to(ROOT)} imports {root}")
    assert offences == []


def test_no_module_imports_a_vendor_sdk() -> None:
    """The engine talks to pydantic_ai, never to a vendor's SDK directly."""
    offences = [
        f"{path.relative_to(ROOT)} imports {root}"
        for package in ALLOWED
        for path in modules(package)
        for root in imported_roots(path) & VENDOR_SDKS
    ]
    assert offences == []


def test_the_scan_sees_a_forbidden_import(tmp_path: Path) -> None:
    """The scanner itself finds both import forms, so the tests above can fail."""
    sample = tmp_path / "m.py"
    sample.write_text("import anthropic.types\nfrom heinzel.cli import main\n")
    assert imported_roots(sample) == {"anthropic", "heinzel"}


class TestHeinzelLayers:
    def test_every_module_has_a_layer(self) -> None:
        """A new room must be placed in LAYERS before it can land."""
        for name in graph():
            unit_of(name)

    def test_nothing_imports_upward_or_sideways(self) -> None:
        """Inside heinzel, every import points to the module's own unit or a lower layer."""
        assert upward(graph()) == []

    def test_no_circle(self) -> None:
        """No two heinzel modules import each other, directly or round about."""
        assert circles(graph()) == []

    def test_the_checks_can_fail(self) -> None:
        """An upward import and a circle are both found, so the two tests above can fail."""
        edges = {
            "heinzel.store.home": {"heinzel.service.service"},
            "heinzel.service.service": set(),
        }
        assert upward(edges) == ["heinzel.store.home imports heinzel.service.service"]
        assert circles({"heinzel.a": {"heinzel.b"}, "heinzel.b": {"heinzel.a"}}) == [
            ["heinzel.a", "heinzel.b"]
        ]
        with pytest.raises(AssertionError):
            unit_of("heinzel.somewhere_new")

    def test_the_architecture_page_names_every_module(self) -> None:
        """docs/architecture.md has one line per module of ours (a room's ``__init__`` may
        have one), and names none that is gone."""
        text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
        named = set(re.findall(r"^- `((?:ledger|machines|heinzel)/[\w/]+\.py)`", text, re.M))
        actual = {str(p.relative_to(ROOT)) for package in ALLOWED for p in modules(package)}
        rooms = {m for m in actual if m.endswith("/__init__.py") and m.count("/") > 1}
        named -= rooms & named
        actual -= rooms
        assert (sorted(actual - named), sorted(named - actual)) == ([], [])
