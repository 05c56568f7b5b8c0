"""What the command line reads in a person's form: asset refs as typed.

`artifact_forms` turns what a person gives ``hz heinzel list --artifact`` into the forms
the index matches (the ref as written, and for a file the absolute path it names from the
current folder). Rows are printed plain by `heinzel.index.plain.plain_rows`, so ``--json``
never nests JSON in strings.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["artifact_forms"]


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
