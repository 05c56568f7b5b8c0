"""The package arrows of docs/architecture.md: ledger <- machines <- heinzel."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OURS = {"ledger", "machines", "heinzel"}
ALLOWED = {"ledger": set(), "machines": {"ledger"}, "heinzel": {"ledger", "machines"}}
VENDOR_SDKS = {"anthropic", "openai", "claude_agent_sdk"}


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
