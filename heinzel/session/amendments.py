"""Amendments filed on a Heinzelmännchen: the user's are accepted, its own may not widen.

`propose_amendment` is shared by the service (``hz heinzel amend``) and the turn host (a
turn whose outcome proposes an amendment): HZC050 refuses a widening the Heinzelmännchen
proposes on its own, HZH079 what the user already declined, and HZH340 and HZH341 any
amendment whose output or input is one of hz's own files (`heinzel.store.targets`). A
turn's amendment that cites the user's chat message (``asked``) is the user's request,
filed ``by: user`` with the message's request id and hash (``requested_in``, ``hash``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from heinzel.contract import CompiledContract, check_amendment, compile_contract, widenings
from heinzel.errors import HeinzelError
from heinzel.ids import new_id
from heinzel.session.sessions import Sessions
from heinzel.store.contracts import load_facts, store_version
from heinzel.store.targets import check_targets, created_origin

__all__ = ["propose_amendment"]


def propose_amendment(
    sessions: Sessions,
    ref: str,
    text: str,
    *,
    by: str,
    source: str,
    reason: str = "",
    asked: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """File an amendment: the user's is accepted; the Heinzelmännchen's may not widen.

    ``asked`` (a turn's amendment that cites the user's chat message: its request id and
    hash) makes it the user's request: filed ``by: user`` with ``requested_in`` and
    ``hash``, checked as the user's (it may widen; ``hz approve`` decides)."""
    if asked is not None:
        by = "user"
    row = sessions.resolve(ref, write=True)
    new = compile_contract(text, source=source)
    check_targets(new, created_origin(sessions.home, row["id"]), sessions.protected)
    fresh = row["contract_version"] is None and row["proposed_version"] is not None
    if fresh and by == "user" and asked is None:
        return _replace_proposal(sessions, row, text, new)
    if row["contract_version"] is None:
        raise HeinzelError(
            "HZH074",
            f"{row['name']} has no approved version to amend",
            f"approve version 1 first: `hz approve {row['name']}`",
        )
    if sessions.queries.pending_amendment(row["id"]):
        raise HeinzelError(
            "HZH075",
            f"{row['name']} already has a pending amendment",
            f"approve it (`hz approve {row['name']}`) or decline it first "
            f"(`hz heinzel decline {row['name']}`)",
        )
    current = int(row["contract_version"])
    old = compile_contract(
        sessions.home.contract_text_path(row["id"], current).read_text(encoding="utf-8"),
        source=f"v{current}",
    )
    check_amendment(old, new, proposed_by="heinzel" if by == "heinzel" else "user", source=source)
    if by == "heinzel":
        _refuse_declined(sessions, row, old, new)
    widens = bool(widenings(old, new))
    version = sessions.queries.next_version(row["id"])
    facts = store_version(sessions.home, row["id"], version, text, new)
    amendment = "am-" + new_id(sessions.clock)[3:]
    sessions.append(
        row["id"],
        "amendment.proposed",
        {
            "amendment": amendment,
            "version": version,
            "fingerprint": facts.fingerprint,
            "by": by,
            "widens": widens,
            "reason": reason[:200],
            **(
                {"requested_in": asked["request"], "hash": asked["hash"]}
                if asked is not None
                else {}
            ),
        },
        short_text=("reason",),
    )
    return sessions.queries.amendment(amendment)


def _replace_proposal(
    sessions: Sessions, row: Mapping[str, Any], text: str, new: CompiledContract
) -> dict[str, Any]:
    """The user replaces a proposal nobody approved yet: the new text is stored as the next
    version (a stored version never changes) and proposed in its place; approving the
    Heinzelmännchen then grants this text, and the old proposal is never run (the service
    checks the new outputs first, as `new --from` does)."""
    version = int(row["proposed_version"]) + 1
    facts = store_version(sessions.home, row["id"], version, text, new)
    sessions.append(
        row["id"],
        "contract.proposed",
        {"version": version, "fingerprint": facts.fingerprint, "by": "user"},
    )
    return {
        "heinzel": row["id"],
        "name": row["name"],
        "version": version,
        "replaces": int(row["proposed_version"]),
        "by": "user",
        "state": "proposed",
        "widens": False,
    }


def _refuse_declined(
    sessions: Sessions, row: Mapping[str, Any], old: CompiledContract, new: CompiledContract
) -> None:
    """HZH079: the Heinzelmännchen proposes again what the user declined: the same
    contract, or an input that only a declined amendment had."""
    declined = sessions.queries.declined_amendments(row["id"])
    offered = set(new.hz.inputs) - set(old.hz.inputs)
    for amendment in declined:
        facts = load_facts(sessions.home, row["id"], amendment["version"], amendment["fingerprint"])
        again = offered & (set(facts.inputs) - set(old.hz.inputs))
        if facts.fingerprint == new.fingerprint or again:
            what = f"input {sorted(again)[0]}" if again else "this amendment"
            raise HeinzelError(
                "HZH079",
                f"{row['name']} proposed {what} again after the user declined it "
                f"(v{amendment['version']})",
                "a declined source is never proposed again; the user may still amend",
            )
