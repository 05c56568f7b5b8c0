"""Approving a local draft as the user would: by deleting its tag line in the document.

``hz approve NAME|KEY`` of a pending draft comes here; the next tick reads the approval
from the document and wakes the learning turn.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from heinzel.capabilities.documents import TAG_PREFIX, asset_of_key
from heinzel.errors import HeinzelError
from heinzel.session.sessions import Sessions
from ledger.files import write_atomic

__all__ = ["approve_draft"]


def approve_draft(service: Sessions, item: str) -> dict[str, Any] | None:
    """Approve a pending local draft (by key, or the named one's latest) by deleting its
    tag line, as the user would; None when ``item`` names no pending draft."""
    drafts = service.queries.drafts()
    found = [d for d in drafts if d["key"] == item]
    if not found:
        try:
            heinzel = service.resolve(item)["id"]
        except HeinzelError:
            return None
        found = [d for d in drafts if d["heinzel"] == heinzel]
    if not found:
        return None
    key = str(found[-1]["key"])
    path = Path(asset_of_key(key).partition(":")[2])
    try:
        data = path.read_bytes()
        lines = data.decode("utf-8").split("\n")
    except (OSError, UnicodeDecodeError) as error:
        raise HeinzelError(
            "HZH239",
            f"cannot read the draft's document {path}: {error}",
            "approve it by deleting the tag line yourself",
        ) from None
    marker = f"<!-- hz:draft key={key} -->"
    at = [i for i, line in enumerate(lines) if line.strip() == marker]
    if len(at) != 1:
        raise HeinzelError(
            "HZH239",
            f"the draft {key} is not in {path} as placed",
            "put its markers back, or approve it by hand",
        )
    if at[0] > 0 and lines[at[0] - 1].lstrip().startswith(TAG_PREFIX):
        del lines[at[0] - 1]
        mode = stat.S_IMODE(os.stat(path).st_mode)
        write_atomic(path, "\n".join(lines).encode("utf-8"))
        os.chmod(path, mode)
    return {
        "approved": key,
        "file": str(path),
        "state": "approved in place; the next tick learns from your edits",
    }
