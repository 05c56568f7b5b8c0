"""What the command line reads and prints in a person's form: asset refs as typed, rows as
plain JSON.

`artifact_forms` turns what a person gives ``hz heinzel list --artifact`` into the forms
the index matches (the ref as written, and for a file the absolute path it names from the
current folder); `plain_rows` decodes the JSON the index keeps in text columns, so
``--json`` never nests JSON in strings.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

__all__ = ["artifact_forms", "plain_rows"]

_JSON_COLUMNS = ("assets", "watched", "frontmatter", "pending")


def artifact_forms(text: str | None, cwd: Path | None = None) -> tuple[str, ...] | None:
    """``text`` as given, and for a file (``file:report.md``, ``report.md``,
    ``./report.md``, ``/abs/report.md``, ``~/report.md``) ``file:<absolute>`` from
    ``cwd``. A ref of another kind (``doc:team/weekly``) is matched as written; no text,
    no filter (None)."""
    if not text:
        return None
    scheme, colon, rest = text.partition(":")
    if colon and scheme == "file":
        path = rest
    elif not colon or text.startswith(("/", ".", "~")):
        path = text
    else:
        return (text,)
    if not path:
        return (text,)
    here = Path.cwd() if cwd is None else cwd
    absolute = os.path.normpath(here / Path(path).expanduser())
    return (text, f"file:{absolute}")


def plain_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
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
