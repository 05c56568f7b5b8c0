"""Contract versions on disk: ``contract/v<n>.prose.md`` and its compiled form ``v<n>.json``.

Both are written atomically, privately, and before the spine event that names
them (``contract.proposed``, ``amendment.proposed``), and never change after, so
the index may read a version's facts back by version and fingerprint.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from heinzel.errors import HeinzelError
from heinzel.store.home import Home
from ledger.files import ensure_private_dir, write_atomic

if TYPE_CHECKING:
    from heinzel.contract import CompiledContract

__all__ = ["ContractFacts", "facts_of", "flatten", "load_facts", "store_version"]


@dataclass(frozen=True, slots=True)
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
    payload = {"facts": asdict(facts), "compiled": json.loads(compiled.to_json())}
    write_atomic(json_path, json.dumps(payload, sort_keys=True, indent=1).encode("utf-8"))
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
