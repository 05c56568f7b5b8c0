"""Nothing in logic reads the wall clock (design.md, "Test hooks"): an `ast` scan of
ledger, machines and heinzel for the direct reads, outside the one clock."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
READS = {
    ("time", "time"),
    ("time", "time_ns"),
    ("datetime", "now"),
    ("datetime", "utcnow"),
    ("datetime", "today"),
    ("date", "today"),
}
"""``module_or_class.attribute`` pairs that read the wall clock (``time.monotonic``, a
running time measured by the runners, is not one)."""
ALLOWED = {
    "heinzel/clock.py": "system_clock: the one wall clock, replaced by HZ_NOW",
    "heinzel/capabilities/github_http.py": "GitHubClient's clock default (rate-limit reset); "
    "build_adapters has no clock to hand it yet",
}


def clock_reads(path: Path) -> list[str]:
    """Each ``time.time``-like attribute or ``from time import time``-like import."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and (node.value.id, node.attr) in READS
        ):
            found.append(f"{node.value.id}.{node.attr} (line {node.lineno})")
        elif isinstance(node, ast.ImportFrom) and node.module in ("time", "datetime"):
            found += [
                f"from {node.module} import {a.name} (line {node.lineno})"
                for a in node.names
                if (node.module, a.name) in READS
            ]
    return found


def test_no_module_reads_the_wall_clock_but_the_clock() -> None:
    """Every clock read goes through the injected clock, so HZ_NOW fixes it (the team's
    lease commits once stamped ``time.time()``)."""
    found = {
        str(path.relative_to(ROOT)): reads
        for package in ("ledger", "machines", "heinzel")
        for path in sorted((ROOT / package).rglob("*.py"))
        if (reads := clock_reads(path)) and str(path.relative_to(ROOT)) not in ALLOWED
    }
    assert found == {}


def test_the_scan_finds_a_direct_read(tmp_path: Path) -> None:
    """The scan sees the forms it looks for (so an empty answer means something)."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import time\nfrom datetime import datetime\nfrom time import time_ns\n"
        "a = time.time()\nb = datetime.now()\n",
        encoding="utf-8",
    )
    assert clock_reads(probe) == [
        "from time import time_ns (line 3)",
        "time.time (line 4)",
        "datetime.now (line 5)",
    ]
