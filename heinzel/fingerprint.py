"""Fingerprints of fetched inputs: the SHA-256 of canonical JSON, per facet and whole.

An input's fingerprint map names each facet (a part of the input a contract may watch on
its own, ADR 0021 §8) and the lowercase hex SHA-256 of the facet's canonical JSON
(`ledger.event.canonical`). The whole input's fingerprint is the same hash over the map
itself, so it moves exactly when some facet moved. Source-changed keys use the watched
facet's hash, or the whole one when the input names no facet (ADR 0049, statement 13).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ledger.event import canonical, sha256_hex

__all__ = ["facet_fingerprints", "fingerprint", "whole_fingerprint"]


def fingerprint(value: Any) -> str:
    """The lowercase hex SHA-256 of ``value``'s canonical JSON."""
    return sha256_hex(canonical(value).encode("utf-8"))


def facet_fingerprints(facets: Mapping[str, Any]) -> dict[str, str]:
    """One fingerprint per facet: ``{facet: sha256 of its canonical JSON}``."""
    return {name: fingerprint(value) for name, value in facets.items()}


def whole_fingerprint(fingerprints: Mapping[str, str]) -> str:
    """The fingerprint of a whole input: the hash of its facet map's canonical JSON."""
    return fingerprint(dict(fingerprints))
