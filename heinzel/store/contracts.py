"""Contract versions on disk: ``contract/v<n>.prose.md`` and its compiled form ``v<n>.json``.

Both are written atomically, privately, and before the spine event that names
them (``contract.proposed``, ``amendment.proposed``), and never change after, so
the index may read a version's facts back by version and fingerprint, and a turn
the compiled form instead of compiling the text again (`approved_text`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from heinzel.errors import HeinzelError
from heinzel.store.home import Home
from ledger.errors import LedgerError
from ledger.files import ensure_private_dir, read_capped, write_atomic
from ledger.records import frozen_record

if TYPE_CHECKING:
    from heinzel.contract import CompiledContract

__all__ = [
    "ContractFacts",
    "approved_text",
    "compiled_version",
    "facts_of",
    "flatten",
    "load_facts",
    "store_version",
]


@frozen_record
class ContractFacts:
    """What the index and the tick need of a contract version: no body text."""

    name: str
    version: int
    fingerprint: str
    namespace: str
    schedule: str | None
    timezone: str | None
    assets: list[str] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    frontmatter: dict[str, Any] = field(default_factory=dict)


def facts_of(compiled: CompiledContract, version: int) -> ContractFacts:
    """The facts of one compiled contract at ``version``."""
    hz = compiled.frontmatter.hz
    return ContractFacts(
        name=compiled.name,
        version=version,
        fingerprint=compiled.fingerprint,
        namespace=hz.namespace,
        schedule=hz.schedule,
        timezone=hz.timezone,
        assets=sorted({output.asset for output in hz.outputs.values()}),
        inputs=sorted(hz.inputs),
        frontmatter=flatten(compiled.frontmatter.model_dump(mode="json", by_alias=True)),
    )


def flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Dotted keys for every scalar or list leaf: ``{"hz.namespace": "me", ...}``."""
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, path + "."))
        else:
            flat[path] = value
    return flat


def store_version(
    home: Home, heinzel_id: str, version: int, text: str, compiled: CompiledContract
) -> ContractFacts:
    """Write ``v<n>.prose.md`` and ``v<n>.json``; refuse to overwrite a different version."""
    ensure_private_dir(home.contract_dir(heinzel_id))
    facts = facts_of(compiled, version)
    json_path = home.contract_json_path(heinzel_id, version)
    if json_path.exists():
        existing = json.loads(json_path.read_text(encoding="utf-8"))
        if existing["facts"]["fingerprint"] != facts.fingerprint:
            raise HeinzelError(
                "HZH060",
                f"contract version {version} of {heinzel_id} already exists with another text",
                "versions never change; propose an amendment instead",
            )
        return facts
    write_atomic(home.contract_text_path(heinzel_id, version), text.encode("utf-8"))
    payload = {
        "facts": asdict(facts),
        "compiled": json.loads(compiled.to_json()),
        "order": ORDER_KEPT,
    }
    write_atomic(json_path, json.dumps(payload, indent=1).encode("utf-8"))
    return facts


def load_facts(home: Home, heinzel_id: str, version: int, fingerprint: str) -> ContractFacts:
    """Read a version's facts back, checking the fingerprint the event recorded."""
    path = home.contract_json_path(heinzel_id, version)
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
        facts = ContractFacts(**payload["facts"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise HeinzelError(
            "HZH061",
            f"contract v{version} of {heinzel_id} is missing or unreadable ({path})",
            "the contract files are kept with the session; restore them from a backup",
        ) from exc
    if facts.fingerprint != fingerprint:
        raise HeinzelError(
            "HZH062",
            f"contract v{version} of {heinzel_id} does not match the fingerprint its spine "
            "recorded",
            "the file was edited by hand; restore it, since versions never change",
        )
    return facts


def approved_text(
    home: Home, heinzel_id: str, version: int, fingerprint: str
) -> tuple[CompiledContract, str]:
    """The approved version's compiled contract and text, as a turn runs it: the form
    kept in ``v<n>.json`` when it is that of this text (`_stored_form`), else compiled.

    A ``contract/`` folder that is a link is HZH063 (hz follows no planted link), a
    missing or unreadable version HZH061, and a file whose fingerprint is not the one
    approved (edited by hand) HZH062: a changed file never runs unapproved.
    """
    folder = home.contract_dir(heinzel_id)
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise HeinzelError(
            "HZH063",
            f"the contract folder of {heinzel_id} ({folder}) is a link or not a folder",
            "hz follows no planted link: move it away and restore the real folder",
        )
    from heinzel.contract.compiler import MAX_CONTRACT_BYTES  # the compiler loads here only

    path = home.contract_text_path(heinzel_id, version)
    try:
        text = read_capped(path, MAX_CONTRACT_BYTES, follow=False).decode("utf-8")
    except (OSError, LedgerError, UnicodeDecodeError) as exc:
        raise HeinzelError(
            "HZH061",
            f"contract v{version} of {heinzel_id} is missing or unreadable ({path})",
            "the contract files are kept with the session; restore them from a backup",
        ) from exc
    compiled = _stored_form(home, heinzel_id, version, text, fingerprint)
    if compiled is None:
        compiled = compiled_version(text, version)
    if compiled.fingerprint != fingerprint:
        raise HeinzelError(
            "HZH062",
            f"contract v{version} of {heinzel_id} was changed after it was approved "
            "(its fingerprint is not the approved one); it does not run",
            "restore the approved file, or propose the change: `hz heinzel amend NAME --from FILE`",
        )
    return compiled, text


def _stored_form(
    home: Home, heinzel_id: str, version: int, text: str, approved: str
) -> CompiledContract | None:
    """The compiled form kept in ``v<n>.json`` when it is that of exactly ``text`` (its
    ``text_sha256``) and of the approved intent (its fingerprint, computed again from the
    form itself, so an edited form is not believed); None (compile the text) otherwise:
    missing, unreadable, or written by a compiler whose form no longer reads."""
    from heinzel.contract.compiler import MAX_CONTRACT_BYTES

    path = home.contract_json_path(heinzel_id, version)
    try:
        kept = read_capped(path, 4 * MAX_CONTRACT_BYTES, follow=False)
    except (OSError, LedgerError):
        return None
    return _believed(kept, text, approved)


@lru_cache(maxsize=64)
def _believed(kept: bytes, text: str, approved: str) -> CompiledContract | None:
    """`_stored_form`'s verdict on the bytes of ``v<n>.json``, once per process for the
    same bytes, text and approved fingerprint (a turn reads its contract more than once):
    the same bytes give the same verdict."""
    from heinzel.contract.compiler import CompiledContract, stored_fingerprint

    try:
        payload = json.loads(kept)
        if payload.get("order") != ORDER_KEPT:
            return None  # written with sorted keys: the inputs' declared order is lost
        compiled = CompiledContract.from_stored(json.dumps(payload["compiled"]))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None  # a pydantic ValidationError is a ValueError
    sha = "sha256:" + hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()
    if compiled.text_sha256 != sha or compiled.fingerprint != approved:
        return None
    return compiled if stored_fingerprint(compiled) == approved else None


ORDER_KEPT = "declared"
"""``v<n>.json``'s ``order``: its mappings keep the contract's declared order (inputs,
outputs), so a turn may run the stored form; forms without it (written with sorted
keys) are compiled from the text again."""


@lru_cache(maxsize=64)
def compiled_version(text: str, version: int) -> CompiledContract:
    """A version's text compiled once per process (a turn asks more than once; compiling
    is a function of the text, and the compiled contract is frozen)."""
    from heinzel.contract import compile_contract

    return compile_contract(text, source=f"v{version}")
