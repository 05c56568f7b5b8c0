"""The offline model's rule for a discovered turn: propose the source the discovery found.

A turn of cause ``discovered`` has the inputs ``discovered`` (the record the daily
discovery wrote: the hint's name, the method, its args, the input it replaces) and
``contract`` (the text of the current version). The rule adds the source as an input
named by the hint, drops the input it replaces (``instead_of``), in the frontmatter and in
the body's Requires list, and proposes that text as an amendment. Nothing else changes,
so the amendment widens nothing the hint did not grant (`heinzel.contract.widenings`).
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["discovered_outcome"]


def _block(lines: list[str], key: str) -> tuple[int, int, str] | None:
    """Where the block-style mapping ``key:`` starts, where it ends, its entries' indent."""
    pattern = re.compile(rf"^(\s*){key}:\s*$")
    at = next((i for i, line in enumerate(lines) if pattern.match(line)), None)
    if at is None or at + 1 >= len(lines):
        return None
    outer = len(lines[at]) - len(lines[at].lstrip())
    indent = lines[at + 1][: len(lines[at + 1]) - len(lines[at + 1].lstrip())]
    if len(indent) <= outer:
        return None
    end = at + 1
    while end < len(lines) and (
        not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > outer
    ):
        end += 1
    return at, end, indent


def _drop(lines: list[str], key: str, name: str | None) -> list[str]:
    """The lines without the entry ``name`` of the mapping ``key:`` (and without ``key:``
    itself when that was its only entry)."""
    found = _block(lines, key)
    if found is None or not name:
        return lines
    at, end, indent = found
    entries: list[list[str]] = []
    for line in lines[at + 1 : end]:
        if line.startswith(indent) and line[len(indent) :][:1].strip():
            entries.append([line])
        elif entries:
            entries[-1].append(line)
    kept = [e for e in entries if not e[0].strip().startswith(f"{name}:")]
    body = [line for entry in kept for line in entry]
    return lines[:at] + ([lines[at], *body] if body else []) + lines[end:]


def _entry(name: str, record: dict[str, Any]) -> str:
    """The new input in YAML's flow form (JSON is valid YAML, quoting included)."""
    spec: dict[str, Any] = {"from": record["from"], "args": record["args"]}
    if record.get("recheck"):
        spec["recheck"] = record["recheck"]
    return f"{name}: {json.dumps(spec, ensure_ascii=False)}"


def _frontmatter(lines: list[str], name: str, record: dict[str, Any]) -> list[str] | None:
    """The frontmatter lines with the input added, the replaced one and the hint dropped."""
    found = _block(lines, "inputs")
    if found is None:
        return None
    _, end, indent = found
    lines = [*lines[:end], indent + _entry(name, record), *lines[end:]]
    return _drop(_drop(lines, "inputs", record.get("instead_of")), "discover", name)


def _body(lines: list[str], name: str, record: dict[str, Any]) -> list[str]:
    """The Requires list with a line for the new input, the replaced one's dropped."""
    replaced = record.get("instead_of")
    kept = [line for line in lines if not (replaced and line.startswith(f"- `{replaced}`"))]
    try:
        head = next(i for i, line in enumerate(kept) if line.strip() == "### Requires")
    except StopIteration:
        return kept
    last = head
    for i in range(head + 1, len(kept)):
        if kept[i].startswith("#"):
            break
        if kept[i].startswith("- "):
            last = i
    where = str(record["args"].get("doc", record["from"]))
    instead = f", instead of `{replaced}`" if replaced else ""
    line = f"- `{name}`: {where}, found by discovery{instead}"
    kept.insert(last + 1 if last > head else head + 2, line)
    return kept


def amended_text(contract: str, record: dict[str, Any]) -> str | None:
    """``contract`` with the discovered source as the input the hint names; None when the
    text has no block-style ``inputs:`` to add it to."""
    lines = contract.split("\n")
    if not lines or lines[0].strip() != "---":
        return None
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        return None
    name = str(record["input"])
    front = _frontmatter(lines[1:end], name, record)
    if front is None:
        return None
    return "\n".join([lines[0], *front, *_body(lines[end:], name, record)])


def discovered_outcome(inputs: dict[str, str], not_ai: str) -> dict[str, Any] | None:
    """The amendment proposing the discovered source, or None when the inputs lack it."""
    try:
        record = json.loads(inputs["discovered"])
        text = amended_text(inputs["contract"], record)
    except (KeyError, ValueError, TypeError, AttributeError):
        return None
    if text is None:
        return None
    where = record["args"].get("doc", record["from"])
    instead = f" instead of {record['instead_of']}" if record.get("instead_of") else ""
    return {
        "report": f"{not_ai}: discovered {where}; proposing to read it{instead}",
        "amendment": {
            "text": text,
            "why": f"{not_ai}: discovery found {where}, which the hint {record['input']} "
            f"names; read it{instead}"[:300],
        },
    }
