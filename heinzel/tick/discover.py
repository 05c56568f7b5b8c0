"""The daily discovery (ADR 0049 statement 12, the worked example's Wednesday).

Once a day (the first tick of each UTC day; ``<home>/heinzel/discovery.json`` holds the
day it last ran), the tick looks for sources the contracts' ``discover`` hints name and no
contract reads yet. Only Heinzelmännchen whose approved version has hints are read (one
index query finds them), none that is paused, retired or has an amendment pending. For a
``documents.read`` hint the sources are the Markdown files (``*.md``) in the folder the
contract came from and its subfolders (two levels, at most `MAX_FILES` files, hidden
ones left out), minus the documents its inputs and outputs name already.

A match is a wake of cause ``discovered`` with key ``<id>@discovered:<source>``
(`machines.keys.discovered`), so a source wakes at most once: a key that has a turn,
finished or declined, is never woken again. One source per Heinzelmännchen per day, the
first in name order whose key has no turn (a turn proposes one amendment); its record is
written to the inbox before the wake (`heinzel.store.discovered`). A folder that can't be
listed is reported (``HZH178``) and tried again the next day.
"""

from __future__ import annotations

import hashlib
import json
import os
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heinzel.errors import HeinzelError
from heinzel.session.sessions import Sessions
from heinzel.store.contracts import approved_text
from heinzel.store.discovered import write_found
from heinzel.store.sources import absolute_args
from heinzel.tick.isolate import isolated
from heinzel.tick.plan import Planner
from ledger.event import format_ts
from ledger.files import write_atomic
from ledger.records import frozen_record
from machines import keys
from machines.keys import Wake

if TYPE_CHECKING:  # the compiler loads only when a tick reads a contract
    from heinzel.contract import CompiledContract
    from heinzel.contract.model import Discover

__all__ = ["MAX_FILES", "Discovery", "Found"]

MAX_FILES = 500
"""The most files one folder's listing looks at (bounded work, whatever the folder)."""

_DEPTH = 2


@frozen_record
class Found:
    """One discovered source and the wake it becomes."""

    heinzel: str
    source: str
    wake: Wake


class Discovery:
    """The daily job over one home's ``discover`` hints."""

    def __init__(self, service: Sessions) -> None:
        self.service = service
        self.marker = service.home.heinzel_dir / "discovery.json"

    def due(self, now: datetime) -> bool:
        """Whether today's discovery has not run yet."""
        try:
            day = json.loads(self.marker.read_text(encoding="utf-8")).get("day")
        except (OSError, ValueError, AttributeError):
            day = None
        return bool(day != format_ts(now)[:10])

    def run(self, now: datetime, planner: Planner, errors: list[dict[str, Any]]) -> list[Found]:
        """Today's wakes (none when it ran today already); the day is marked after."""
        if not self.due(now):
            return []
        found: list[Found] = []
        for row in self._rows():
            with isolated(self.service, row["id"], errors, "discovery"):
                one = self._one(row, planner)
                if one is not None:
                    found.append(one)
        day = json.dumps({"day": format_ts(now)[:10], "at": format_ts(now)})
        write_atomic(self.marker, day.encode("utf-8"))
        return found

    def _rows(self) -> list[dict[str, Any]]:
        """The Heinzelmännchen whose approved version has hints, with their origin."""
        return [
            dict(r)
            for r in self.service.index.db.query(
                "SELECT h.id, h.contract_version, h.fingerprint, o.origin FROM heinzel h "
                "LEFT JOIN tick_origins o ON o.heinzel = h.id "
                "WHERE h.contract_version IS NOT NULL AND h.hold IS NULL "
                "AND h.state NOT IN ('paused', 'retired') "
                "AND h.frontmatter LIKE '%\"hz.discover.%' ORDER BY h.id"
            )
        ]

    def _one(self, row: dict[str, Any], planner: Planner) -> Found | None:
        """The first source of this Heinzelmännchen's hints whose key has no turn."""
        heinzel = str(row["id"])
        if self.service.queries.pending_amendment(heinzel):
            return None
        version = int(row["contract_version"])
        compiled, _ = approved_text(self.service.home, heinzel, version, str(row["fingerprint"]))
        origin = Path(str(row["origin"] or "."))
        candidates: list[tuple[str, str, Discover, str]] = []
        known, listed = _known_docs(compiled, origin), _documents(origin)
        for name, hint in sorted(compiled.hz.discover.items()):
            for relative in listed:
                doc = f"file:{relative}"
                absolute = str(absolute_args("documents", "read", {"doc": doc}, origin)["doc"])
                if absolute in known or not hint.admits(hint.from_, {"doc": doc}):
                    continue
                candidates.append((_source(hint.from_, relative), name, hint, doc))
        keyed = {keys.discovered(heinzel, c[0]): c for c in candidates}
        taken = planner.taken(keyed)
        for key, (source, name, hint, doc) in keyed.items():
            if key in taken:
                continue
            record = {
                "input": name,
                "from": hint.from_,
                "args": {"doc": doc},
                "instead_of": hint.instead_of,
                "recheck": _duration(hint),
                "version": version,
            }
            write_found(self.service.home, heinzel, source, record)
            return Found(heinzel, source, Wake("discovered", key))
        return None


def _duration(hint: Discover) -> str | None:
    """The hint's recheck as a contract writes it (whole days, hours, minutes or seconds)."""
    if hint.recheck is None:
        return None
    seconds = int(hint.recheck.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _source(method: str, relative: str) -> str:
    """The key's source part: readable when it can be, else ``<method>:#<16 hex>``."""
    readable = f"{method}:file:{relative}"
    if len(readable) <= 120 and not any(c.isspace() or c == "@" for c in readable):
        return readable
    return f"{method}:#" + hashlib.sha256(relative.encode("utf-8")).hexdigest()[:16]


def _known_docs(compiled: CompiledContract, origin: Path) -> set[str]:
    """The documents the contract reads or writes already, as absolute ``file:`` assets."""
    docs = [str(spec.args.get("doc")) for spec in compiled.hz.inputs.values() if "doc" in spec.args]
    docs += [output.asset for output in compiled.hz.outputs.values()]
    return {
        str(absolute_args("documents", "read", {"doc": doc}, origin)["doc"])
        for doc in docs
        if doc.startswith("file:")
    }


def _documents(origin: Path) -> list[str]:
    """The Markdown files under ``origin`` (two levels, hidden ones left out), relative,
    in name order, at most `MAX_FILES` looked at (HZH178 when it can't be listed)."""
    found: list[str] = []
    try:
        for top, dirs, files in os.walk(origin):
            depth = len(Path(top).relative_to(origin).parts)
            dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if depth < _DEPTH else []
            for name in sorted(files):
                if name.endswith(".md") and not name.startswith(".") and ".prose." not in name:
                    found.append(str((Path(top) / name).relative_to(origin)))
                if len(found) >= MAX_FILES:
                    return sorted(found)
    except OSError as error:
        raise HeinzelError(
            "HZH178",
            f"discovery can't list {origin}: {error.strerror or error}",
            "check the folder the contract came from; discovery tries again tomorrow",
        ) from None
    if not origin.is_dir():
        raise HeinzelError(
            "HZH178",
            f"discovery can't list {origin}: it is not a folder",
            "check the folder the contract came from; discovery tries again tomorrow",
        )
    return sorted(found)
