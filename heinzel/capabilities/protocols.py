"""What a capability adapter is: a read capability, and a document write adapter.

A read capability answers ``capability.method`` calls with a `Fetched`: the result (JSON
values only), one fingerprint per facet, a cursor and the moment it was fetched. Methods
that search a time window take a `Window` ending at the tick's ``now``; others take none.
A document adapter places drafts in the user's own documents, idempotently by key, and
reports whether a draft is there (``present | absent | unknown``) and what became of it
(`Pending`, `Approved`, `Rejected` or `Unknown`). The tick and the effect ledger talk to
adapters only through these two protocols; docs/adapters.md describes every adapter.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol

from heinzel.capabilities.errors import CapabilityError
from heinzel.fingerprint import facet_fingerprints, whole_fingerprint
from ledger.event import format_ts, parse_ts
from ledger.records import frozen_record

__all__ = [
    "Approved",
    "DocumentAdapter",
    "DraftState",
    "Fetched",
    "MethodSpec",
    "Pending",
    "Presence",
    "ReadCapability",
    "Rejected",
    "Unknown",
    "Window",
    "check_call",
    "fetched",
]


@frozen_record
class Window:
    """A half-open time interval ``[start, end)`` a search method looks in (aware, UTC)."""

    start: datetime
    end: datetime

    @classmethod
    def ending_at(cls, now: datetime, span: timedelta) -> Window:
        """The ``span`` before ``now``: a contract's ``window: 7d`` seen at ``now``."""
        return cls(start=now - span, end=now)

    def contains(self, moment: datetime) -> bool:
        """Whether ``moment`` lies in the window (start included, end excluded)."""
        return self.start <= moment < self.end

    def to_json(self) -> dict[str, str]:
        """``{"start": ts, "end": ts}`` in the spine's timestamp form."""
        return {"start": format_ts(self.start), "end": format_ts(self.end)}


@frozen_record
class MethodSpec:
    """One method an adapter offers: whether it takes a window, which args it accepts."""

    name: str
    window: bool
    args: frozenset[str] = frozenset()
    required: frozenset[str] = frozenset()


@frozen_record
class Fetched:
    """What one fetch returned: the result, fingerprints per facet, cursor and as_of.

    ``result`` holds JSON values only; ``fingerprints`` maps each facet to the SHA-256 of
    its canonical JSON; ``cursor`` is the adapter's opaque position (a head sha, a file's
    mtime and size), ``None`` when it has none; ``as_of`` is the fetch moment (spine form).
    """

    result: Any
    fingerprints: Mapping[str, str]
    cursor: str | None
    as_of: str

    @property
    def fingerprint(self) -> str:
        """The whole input's fingerprint (the hash of the facet map)."""
        return whole_fingerprint(self.fingerprints)

    def to_json(self) -> dict[str, Any]:
        """The JSON object the source cache stores."""
        return {
            "result": self.result,
            "fingerprints": dict(self.fingerprints),
            "cursor": self.cursor,
            "as_of": self.as_of,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Fetched:
        """The inverse of `to_json`; raises KeyError or TypeError on a bad shape."""
        prints = data["fingerprints"]
        cursor = data["cursor"]
        as_of = data["as_of"]
        if not isinstance(prints, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in prints.items()
        ):
            raise TypeError("fingerprints must map facet names to hashes")
        if cursor is not None and not isinstance(cursor, str):
            raise TypeError("cursor must be a string or null")
        if not isinstance(as_of, str):
            raise TypeError("as_of must be a timestamp")
        parse_ts(as_of)
        return cls(result=data["result"], fingerprints=prints, cursor=cursor, as_of=as_of)


def fetched(
    result: Any, facets: Mapping[str, Any], *, cursor: str | None, now: datetime
) -> Fetched:
    """A `Fetched` whose fingerprints are computed from ``facets`` (facet name -> value)."""
    return Fetched(
        result=result, fingerprints=facet_fingerprints(facets), cursor=cursor, as_of=format_ts(now)
    )


class ReadCapability(Protocol):
    """A source a contract reads: ``name.method`` with args, through `fetch`."""

    @property
    def name(self) -> str:
        """The capability's name in the registry (``files``, ``git``, ``code-host``)."""
        ...

    @property
    def methods(self) -> Mapping[str, MethodSpec]:
        """The methods it offers, by name."""
        ...

    def fetch(
        self, method: str, args: Mapping[str, Any], window: Window | None, *, now: datetime
    ) -> Fetched:
        """Fetch ``method`` with ``args`` (and the window, for search methods) at ``now``.

        Raises `CapabilityError` (a code, a message, a hint) for anything it can explain.
        """
        ...


def check_call(
    capability: ReadCapability, method: str, args: Mapping[str, Any], window: Window | None
) -> MethodSpec:
    """The method's spec, after checking the call: known method, its args, its window."""
    spec = capability.methods.get(method)
    if spec is None:
        offered = ", ".join(sorted(capability.methods))
        raise CapabilityError(
            "HZH101",
            f"{capability.name} has no method {method}",
            f"use one of: {offered}",
        )
    unknown = sorted(set(args) - spec.args)
    missing = sorted(spec.required - set(args))
    if unknown or missing:
        what = "unknown " + ", ".join(unknown) if unknown else "missing " + ", ".join(missing)
        accepted = ", ".join(sorted(spec.args)) or "none"
        raise CapabilityError(
            "HZH102",
            f"{capability.name}.{method}: {what} in args",
            f"args accepted: {accepted}; required: {', '.join(sorted(spec.required)) or 'none'}",
        )
    if spec.window and window is None:
        raise CapabilityError(
            "HZH103",
            f"{capability.name}.{method} searches a time window and got none",
            "give the input a window, e.g. window: 7d",
        )
    if not spec.window and window is not None:
        raise CapabilityError(
            "HZH103",
            f"{capability.name}.{method} takes no window",
            "remove window: from this input",
        )
    return spec


Presence = Literal["present", "absent", "unknown"]
"""What `DocumentAdapter.find` answers: the draft with that key is there, is not, or the
adapter can't tell (the document is unreadable)."""


@frozen_record
class Pending:
    """The draft is placed and its tag line is still there: nobody has decided yet."""

    state: Literal["pending"] = field(default="pending", init=False)


@frozen_record
class Approved:
    """The tag line was deleted: approved by ``approver``, with the text as it now reads."""

    approver: str
    text: str
    state: Literal["approved"] = field(default="approved", init=False)


@frozen_record
class Rejected:
    """The whole draft section is gone: the user rejected it."""

    state: Literal["rejected"] = field(default="rejected", init=False)


@frozen_record
class Unknown:
    """The adapter can't tell (the document is unreadable or its markers are broken)."""

    reason: str
    state: Literal["unknown"] = field(default="unknown", init=False)


DraftState = Pending | Approved | Rejected | Unknown


class DocumentAdapter(Protocol):
    """Writes drafts into the user's own documents, idempotently by key."""

    @property
    def name(self) -> str:
        """The capability's name in the registry (``documents``)."""
        ...

    def place_draft(self, key: str, asset: str, text: str, tag: str, place: str = "end") -> str:
        """Place ``text`` under the tag line ``tag`` in ``asset``, keyed by ``key``, in place
        of the same Heinzelmännchen's pending draft there, else where ``place`` says.

        Idempotent: when a draft with ``key`` is already there nothing is written. Returns
        the SHA-256 of the draft text as it stands in the document.
        """
        ...

    def find(self, key: str) -> Presence:
        """Whether a draft with ``key`` is in its document (the effect ledger's probe)."""
        ...

    def draft_state(self, key: str) -> DraftState:
        """What became of the draft with ``key``: pending, approved, rejected or unknown."""
        ...

    def read(self, asset: str) -> str:
        """The document's whole text."""
        ...
