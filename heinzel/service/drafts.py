"""Approving a local draft as the user would: by deleting its tag line in the document.

``hz approve NAME|KEY`` of a pending draft comes here; the next tick reads the approval
from the document and wakes the learning turn. The key of a draft a newer one replaced
(one live draft per output) is refused with HZH250 naming the newer one. Approving a draft
that is already approved (its tag line gone, or the tick has read the approval) is HZH073
"already approved", as approving an approved contract is: one behaviour, exit 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from heinzel.capabilities.documents import TAG_PREFIX, asset_of_key
from heinzel.capabilities.inplace import recover, replace_document
from heinzel.errors import HeinzelError
from heinzel.session.sessions import Sessions

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


def _learns(service: Sessions, heinzel_id: str) -> str:
    """When the approval of a pending draft of ``heinzel_id`` is learned from: the tick
    reads the drafts of one that is neither paused nor retired."""
    row = service.queries.row(heinzel_id)
    name, hold = row["name"], row.get("hold")
    if hold == "paused":
        return (
            f"{name} is paused: it learns from your edits once unpaused "
            f"(`hz heinzel unpause {name}`)"
        )
    if hold == "retired":
        return (
            f"{name} is retired: it learns from your edits only if unretired "
            f"(`hz heinzel unretire {name}`)"
        )
    return "the next tick learns from your edits (`hz system daemon tick`, or the daemon)"


def _already(service: Sessions, heinzel_id: str, key: str, path: Path) -> HeinzelError:
    return HeinzelError(
        "HZH073",
        f"the draft {key} is already approved (its tag line is gone from {path})",
        f"nothing to do: {_learns(service, heinzel_id)}",
    )


def _refuse_approved(service: Sessions, key: str) -> None:
    """A key whose draft the tick already saw approved (and learned from): HZH073."""
    rows = list(
        service.index.db.query(
            "SELECT h.name FROM drafts d JOIN heinzel h ON h.id = d.heinzel "
            "WHERE d.key = ? AND d.state = 'approved'",
            [key],
        )
    )
    if rows:
        name = rows[0]["name"]
        raise HeinzelError(
            "HZH073",
            f"the draft {key} is already approved, and its approval was learned from",
            f"nothing to do: `hz heinzel show {name}` lists what {name} learned",
        )


def approve_draft(service: Sessions, item: str) -> dict[str, Any] | None:
    """Approve a pending local draft (by key, or the named one's latest) by deleting its
    tag line, as the user would; None when ``item`` names no pending draft."""
    drafts = service.queries.drafts()
    found = [d for d in drafts if d["key"] == item]
    if not found:
        _refuse_superseded(service, item)
        _refuse_approved(service, item)
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
        recover(path)  # an in-place write of it a crash interrupted (`inplace`)
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
        raise _already(service, str(found[-1]["heinzel"]), key, path)
    del lines[at[0] - 1]
    replace_document(path, "\n".join(lines).encode("utf-8"))  # in place when hard-linked
    learns = _learns(service, str(found[-1]["heinzel"]))
    return {
        "approved": key,
        "file": str(path),
        "state": f"approved in place; {learns}",
        "learns": learns,
    }
