"""Approving a local draft as the user would: by deleting its tag line in the document.

``hz approve NAME|KEY`` of a pending draft comes here; the next tick reads the approval
from the document and wakes the learning turn. The key of a draft a newer one replaced
(one live draft per output) is refused with HZH250 naming the newer one. Approving a draft
that is already approved (its tag line gone, or the tick has read the approval) is HZH073
"already approved", as approving an approved contract is: one behaviour, exit 1.
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


def _refuse_superseded(service: Sessions, key: str) -> None:
    """A key whose draft a newer one replaced: HZH250 naming the newer one."""
    rows = list(
        service.index.db.query(
            "SELECT d.heinzel, h.name FROM drafts d JOIN heinzel h ON h.id = d.heinzel "
            "WHERE d.key = ? AND d.state = 'superseded'",
            [key],
        )
    )
    if not rows:
        return
    name = rows[0]["name"]
    newer = [d["key"] for d in service.queries.drafts() if d["heinzel"] == rows[0]["heinzel"]]
    instead = f" by {newer[-1]}" if newer else ""
    raise HeinzelError(
        "HZH250",
        f"the draft {key} was replaced{instead}: a newer draft of {name} took its place",
        f"approve the newer one: `hz approve {name}` (`hz drafts` lists it)",
    )


def _already(key: str, path: Path | None = None) -> HeinzelError:
    where = f" (its tag line is gone from {path})" if path is not None else ""
    return HeinzelError(
        "HZH073",
        f"the draft {key} is already approved{where}",
        "nothing to do: the next `hz system daemon tick` learns from your edits",
    )


def _refuse_approved(service: Sessions, key: str) -> None:
    """A key whose draft the tick already saw approved: HZH073."""
    rows = list(
        service.index.db.query(
            "SELECT key FROM drafts WHERE key = ? AND state = 'approved'",
            [key],
        )
    )
    if rows:
        raise _already(key)


def approve_draft(service: Sessions, item: str) -> dict[str, Any] | None:
    """Approve a pending local draft (by key, or the named one's latest) by deleting its
    tag line, as the user would; None when ``item`` names no pending draft."""
    drafts = service.queries.drafts()
    found = [d for d in drafts if d["key"] == item]
    if not found:
        _refuse_superseded(service, item)
        _refuse_approved(service, item)
        try:
            heinzel = service.resolve(item, write=True)["id"]
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
            f"make {path} readable again (restore it if it is gone), then approve; "
            "the draft stays pending until then",
        ) from None
    marker = f"<!-- hz:draft key={key} -->"
    at = [i for i, line in enumerate(lines) if line.strip() == marker]
    if len(at) != 1:
        raise HeinzelError(
            "HZH239",
            f"the draft {key} is not in {path} as placed: its hz:draft marker line "
            + ("is gone" if not at else f"is there {len(at)} times"),
            "keep exactly one hz:draft and one hz:end marker line around the draft, then "
            "approve again (a draft whose markers are gone reads as rejected at the next tick)",
        )
    if at[0] == 0 or not lines[at[0] - 1].lstrip().startswith(TAG_PREFIX):
        raise _already(key, path)
    del lines[at[0] - 1]
    mode = stat.S_IMODE(os.stat(path).st_mode)
    write_atomic(path, "\n".join(lines).encode("utf-8"))
    os.chmod(path, mode)
    return {
        "approved": key,
        "file": str(path),
        "state": "approved in place; the next tick learns from your edits",
    }
