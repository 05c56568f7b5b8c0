"""Rows as plain JSON: the JSON the index keeps in text columns decoded.

The index stores ``assets``, ``watched``, ``frontmatter`` and ``pending`` as JSON text. A
row a surface hands out (the command line's ``--json``, an MCP tool's answer) carries them
decoded, so no answer nests JSON in strings; a value that is not JSON stays text.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable
from typing import Any

__all__ = ["plain_rows"]

_JSON_COLUMNS = ("assets", "watched", "frontmatter", "pending")


def plain_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows with their JSON text columns decoded (a value that is not JSON stays text)."""
    out = []
    for row in rows:
        plain = dict(row)
        for key in _JSON_COLUMNS:
            value = plain.get(key)
            if isinstance(value, str):
                with contextlib.suppress(ValueError):
                    plain[key] = json.loads(value)
        out.append(plain)
    return out
