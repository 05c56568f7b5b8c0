"""Discovered sources waiting for their turn: ``<id>/inbox/discovered-<hash>.json``.

The daily discovery (`heinzel.tick.discover`) writes one record per source it found,
atomically and privately, before the wake of cause ``discovered`` (key
``<id>@discovered:<source>``) names it, as a chat message is written before its turn. The
turn reads it back by the key's source (`read_found`), so a turn resumed after a crash
sees the same source. The record holds the hint's name, the method, the args, the input it
would replace and the contract version it was found under; no content of the source.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from heinzel.store.home import Home
from ledger.files import ensure_private_dir, write_atomic

__all__ = ["found_path", "read_found", "write_found"]


def found_path(home: Home, heinzel_id: str, source: str) -> Path:
    """Where the record of ``source`` (a discovered key's tail) lies."""
    digest = hashlib.sha256(source.encode("utf-8")).hexdigest()[:24]
    return home.inbox_dir(heinzel_id) / f"discovered-{digest}.json"


def write_found(home: Home, heinzel_id: str, source: str, record: dict[str, Any]) -> None:
    """Write the record of ``source`` (the same record again changes nothing)."""
    ensure_private_dir(home.inbox_dir(heinzel_id))
    data = json.dumps({"source": source, **record}, sort_keys=True).encode("utf-8")
    path = found_path(home, heinzel_id, source)
    if not (path.is_file() and path.read_bytes() == data):
        write_atomic(path, data)


def read_found(home: Home, heinzel_id: str, source: str) -> dict[str, Any] | None:
    """The record of ``source``, or None when it is missing or unreadable."""
    try:
        data = json.loads(found_path(home, heinzel_id, source).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("source") == source else None
