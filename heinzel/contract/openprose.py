"""OpenProse files hz reads but does not run: other kinds, legacy programs, multi-node files.

OpenProse's Contract Markdown has the kinds responsibility, function, gateway, pattern and
test (``program``, ``service``, ``agent`` and ``system`` are older ones); hz runs one
``kind: responsibility`` per file. A ``pattern`` is instantiated into other nodes at
compile time and is never run on its own; ``system`` is the retired kind that composed
services. A legacy ``.prose`` file is a program in OpenProse's earlier scripting language
(``session "..."``, ``agent name:``, ``let x = ...``) with no frontmatter at all. A file
whose ``## name`` headings each carry their own ``###`` sections holds several inline nodes.
Each is refused with its own reason and code, never as an unknown kind or a section
written twice.
"""

from __future__ import annotations

from typing import Any

from heinzel.contract.source import LineMap
from heinzel.errors import ContractError
from ledger.lazy import lazy_pattern

__all__ = ["OPENPROSE_KINDS", "check_kind", "legacy_program", "nodes"]

OPENPROSE_KINDS = (
    "function",
    "gateway",
    "test",
    "pattern",
    "program",
    "service",
    "agent",
    "system",
)
"""OpenProse kinds hz reads but can't run: refused with ``HZC010``."""

_WHY = {
    "pattern": (
        "an OpenProse pattern is instantiated into other nodes, never run on its own",
        "write a kind: responsibility that follows the pattern, with an hz: section",
    ),
    "system": (
        "an OpenProse system is a retired kind that composed services; hz does not run it",
        "write each part as its own kind: responsibility file, with an hz: section",
    ),
}


_legacy_re = lazy_pattern(
    r'^(session\s*[":]|agent\s+[\w-]+\s*:|(let|const)\s+\w+\s*=|'
    r'(parallel|loop|repeat|try|block|choice)\b.*:$|(import|use)\s+"|(input|output)\s+\w+\s*[:=])'
)


_node_re = lazy_pattern(r"^##\s+(\S.*?)\s*#*\s*$")
_section_re = lazy_pattern(r"^###\s")
_fence_re = lazy_pattern(r"^\s*(```|~~~)")


def check_kind(data: dict[Any, Any], lines: LineMap, source: str) -> None:
    """Refuse a frontmatter whose ``kind`` is missing (``HZC005``), an OpenProse kind hz
    does not run (``HZC010``) or unknown (``HZC011``)."""
    kind = data.get("kind")
    if "kind" not in data:
        raise ContractError(
            "HZC005",
            "missing key kind",
            "add 'kind: responsibility' to the frontmatter",
            file=source,
            line=lines.line(()),
        )
    if kind == "responsibility":
        return
    line = lines.line(("kind",))
    if isinstance(kind, str) and kind in OPENPROSE_KINDS:
        message, hint = _WHY.get(
            kind,
            (
                f"an OpenProse {kind} is not something hz can run",
                "hz runs contracts of kind responsibility; keep this file for OpenProse",
            ),
        )
        raise ContractError("HZC010", message, hint, file=source, line=line)
    raise ContractError(
        "HZC011",
        f"unknown kind {kind!r}",
        "a contract hz runs has 'kind: responsibility'",
        file=source,
        line=line,
    )


def legacy_program(text: str, source: str) -> ContractError | None:
    """``HZC090`` when ``text`` has no frontmatter and reads as a legacy ``.prose``
    program (or the file is named ``*.prose``), else ``None``."""
    if text.removeprefix("\ufeff").startswith("---"):
        return None
    first = next(
        (
            (number, line.strip())
            for number, line in enumerate(text.splitlines(), start=1)
            if line.strip() and not line.lstrip().startswith(("#", "//"))
        ),
        None,
    )
    looks = first is not None and _legacy_re().match(first[1]) is not None
    if not (looks or source.endswith(".prose")):
        return None
    return ContractError(
        "HZC090",
        "a legacy OpenProse .prose program (the scripting language), not a contract",
        "OpenProse runs it; hz runs a .prose.md contract: frontmatter with "
        "'kind: responsibility' and hz:, then ### Goal and ### Done when (docs/contract.md)",
        file=source,
        line=first[0] if first is not None else 1,
    )


def nodes(body: str, first_line: int, source: str) -> ContractError | None:
    """``HZC091`` when the body holds inline ``## name`` nodes with sections of their
    own (OpenProse's multi-node files), else ``None``."""
    found: list[tuple[str, int]] = []
    current: tuple[str, int] | None = None
    fenced = False
    for offset, line in enumerate(body.split("\n")):
        if _fence_re().match(line):
            fenced = not fenced
        if fenced:
            continue
        if (node := _node_re().match(line)) is not None:
            current = (node[1], first_line + offset)
        elif current is not None and _section_re().match(line):
            found.append(current)
            current = None
    if not found:
        return None
    names = ", ".join(f"## {name} (line {line})" for name, line in found)
    return ContractError(
        "HZC091",
        f"the file holds {len(found) + 1} OpenProse nodes: its own and {names}; "
        "hz runs one responsibility per file",
        "move each ## node into its own .prose.md file (a helper function stays with "
        "OpenProse), so this file holds one responsibility",
        file=source,
        line=found[0][1],
    )
