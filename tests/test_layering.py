"""The arrows of docs/architecture.md: ledger <- machines <- heinzel, and the layers inside
heinzel and inside machines (its rooms), one way, with no circle."""

from __future__ import annotations

import ast
import functools
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
    ("configuration's models", ["heinzel.config.models"]),  # loaded only to coerce or refuse
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
    "heinzel.strings",
    "heinzel.strings.scrub",
    "heinzel.strings.text",
    "heinzel.strings.usd",
    "heinzel.strings.waits",
    "heinzel.vocabulary",
}

# The rooms of machines, top to bottom, each one unit: a module may import its own room
# and the rooms below it. The door is what a host imports; the crash points
# (`machines.crashkit.crash`) sit with the stores, whose writes they kill; `machines.keys`
# is at the door (hosts build keys with it) and in the core's layer (the key rule).
MACHINE_ROOMS: list[tuple[str, list[str]]] = [
    ("door", ["machines", "machines.api", "machines.examples"]),
    ("crashkit", ["machines.crashkit"]),
    ("core", ["machines.core", "machines.keys"]),
    ("telemetry", ["machines.telemetry"]),
    ("stores", ["machines.stores", "machines.crashkit.crash"]),
    (
        "base",
        ["machines.errors", "machines.vocabulary", "machines.host_vocabulary", "machines.loading"],
    ),
]

# The layout rule: a package root holds at most this many modules (the rest in rooms).
ROOT_MODULES = 10


@functools.cache
def parsed(path: Path) -> ast.Module:
    """``path``'s syntax tree, parsed once per test session (read, never changed): the
    tests here walk the same 400 modules about ten times over."""
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def imported_roots(path: Path) -> set[str]:
    tree = parsed(path)
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


def heinzel_imports(
    path: Path, known: set[str], package: str = "heinzel", typing: bool = True
) -> set[str]:
    """The modules of ``package`` that ``path`` imports, anywhere in it (function bodies,
    and TYPE_CHECKING blocks unless ``typing`` is false): ``from a import b`` names
    ``a.b`` when that is a module."""
    tree = parsed(path)
    skipped: set[int] = set()
    if not typing:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                skipped.update(id(inner) for inner in ast.walk(node))
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == package)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] != package:
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


def graph(package: str = "heinzel", typing: bool = True) -> dict[str, set[str]]:
    paths = {module_name(p): p for p in modules(package)}
    known = set(paths)
    return {
        name: heinzel_imports(path, known, package, typing) - {name} for name, path in paths.items()
    }


def room_of(module: str) -> tuple[int, str]:
    """The (layer rank, room) of a machines module: the longest prefix in MACHINE_ROOMS."""
    best: tuple[int, int, str] | None = None
    for rank, (room, prefixes) in enumerate(MACHINE_ROOMS):
        for prefix in prefixes:
            inside = module == prefix or module.startswith(prefix + ".")
            if inside and (best is None or len(prefix) > best[0]):
                best = (len(prefix), rank, room)
    if best is None:
        raise AssertionError(f"{module} is in no room of tests/test_layering.py")
    return best[1], best[2]


def machine_offences(edges: dict[str, set[str]]) -> list[str]:
    """Every import of a machines module that points to a room above its own."""
    offences = []
    for source, targets in sorted(edges.items()):
        rank, room = room_of(source)
        for target in sorted(targets):
            their_rank, their_room = room_of(target)
            if their_room != room and their_rank <= rank:
                offences.append(f"{source} imports {target}")
    return offences


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

    def test_the_root_holds_at_most_ten_modules(self) -> None:
        """heinzel's root keeps the package's own modules; everything else is in a room."""
        assert len(list((ROOT / "heinzel").glob("*.py"))) <= ROOT_MODULES

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


class TestMachineRooms:
    def test_every_module_has_a_room(self) -> None:
        """A new machines module must be placed in MACHINE_ROOMS before it can land."""
        for name in graph("machines"):
            room_of(name)

    def test_rooms_import_only_down(self) -> None:
        """A module imports its own room and the rooms below: the stores never the core,
        the crash-testing kit or the short API; the core never the kit or the door. An
        import under TYPE_CHECKING loads nothing, so it is no arrow here."""
        assert machine_offences(graph("machines", typing=False)) == []

    def test_the_core_reaches_a_store_only_by_its_protocol(self) -> None:
        """The core writes through `machines.stores.journal` (the protocols) only: never a
        concrete store (the spine, Postgres, the disk body) and nothing of the kit, the
        crash points included; the door picks the store."""
        offences = [
            f"{source} imports {target}"
            for source, targets in sorted(graph("machines").items())
            if room_of(source)[1] == "core"
            for target in sorted(targets)
            if (target.startswith("machines.stores.") and target != "machines.stores.journal")
            or target.startswith("machines.crashkit")
        ]
        assert offences == []

    def test_no_circle(self) -> None:
        """No two machines modules import each other, directly or round about."""
        assert circles(graph("machines", typing=False)) == []

    def test_the_root_holds_at_most_ten_modules(self) -> None:
        """machines' root is the door and the words every room uses; the rest is in rooms."""
        assert len(list((ROOT / "machines").glob("*.py"))) <= ROOT_MODULES

    def test_the_checks_can_fail(self) -> None:
        """An upward import and a module in no room are both found."""
        edges = {
            "machines.stores.journal": {"machines.core.fold"},
            "machines.core.runner": {"machines.crashkit.rig", "machines.stores.journal"},
            "machines.crashkit.crash": {"machines.stores.journal"},
        }
        assert machine_offences(edges) == [
            "machines.core.runner imports machines.crashkit.rig",
            "machines.stores.journal imports machines.core.fold",
        ]
        with pytest.raises(AssertionError):
            room_of("elsewhere.new")
