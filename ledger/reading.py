"""Reading a spine: iterate in order, tail from a seq or an offset, skip kinds a
reader does not know, and migrate old kinds in memory (the file is never rewritten).

Reading takes no lock: the one writer only ever appends whole lines, so a reader
sees a prefix of complete lines, and ignores a last line without its newline
(a torn tail the next writer will contain).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from ledger.errors import LedgerError
from ledger.event import ENVELOPE_KEYS, ENVELOPE_VERSION, Event, canonical, sha256_hex
from ledger.files import open_read

__all__ = [
    "LineProblem",
    "Upgrade",
    "Upgrades",
    "check_line",
    "contained_offsets",
    "iter_lines",
    "parse_event",
    "read_events",
]

LineProblem = Literal["invalid-json", "bad-envelope", "non-canonical"]
"""Why one line, taken alone, is not a valid canonical envelope."""

Upgrade = Callable[[Mapping[str, Any]], Mapping[str, Any]]
"""Turns an old kind's data into the new kind's data."""

KIND = re.compile(r"[a-z][a-z0-9_-]*(?:\.[a-z0-9_-]+)*")
_TS = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")
_HEX = re.compile(r"[0-9a-f]{64}")
_KEYS = frozenset(ENVELOPE_KEYS)
_DECODE = json.JSONDecoder().decode
"""What ``json.loads`` does with text (its default decoder), without its per-call checks."""
_KINDS_SEEN: set[str] = set()
"""Kind names that matched `KIND`: a spine has a few dozen, so each is matched once."""


def _loads(body: bytes) -> Any:
    """``json.loads(body)``: a line starting with ``{`` is UTF-8 (what ``json.loads``
    detects for it), decoded the same way; anything else goes through ``json.loads``."""
    if body[:1] == b"{":
        return _DECODE(body.decode("utf-8", "surrogatepass"))
    return json.loads(body)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _envelope_problem(obj: Any) -> str | None:
    """Why ``obj`` is not a valid envelope, or None."""
    if not isinstance(obj, dict):
        return "the line is not a JSON object"
    if obj.keys() != _KEYS:
        return f"keys {sorted(obj)} are not {sorted(_KEYS)}"
    if not (obj["v"] == ENVELOPE_VERSION and _is_int(obj["v"])):
        return "v is not 1"
    if not (_is_int(obj["seq"]) and obj["seq"] >= 1):
        return "seq is not a positive integer"
    if not (isinstance(obj["ts"], str) and _TS.fullmatch(obj["ts"])):
        return "ts is not UTC with milliseconds and Z"
    prev = obj["prev"]
    if not (prev is None or (isinstance(prev, str) and _HEX.fullmatch(prev))):
        return "prev is neither null nor 64 lowercase hex digits"
    if not (obj["turn"] is None or isinstance(obj["turn"], str)):
        return "turn is neither null nor a string"
    kind = obj["kind"]
    if type(kind) is not str or (kind not in _KINDS_SEEN and not _known_kind(kind)):
        return "kind is not a kind name"
    if not (obj["key"] is None or isinstance(obj["key"], str)):
        return "key is neither null nor a string"
    if not isinstance(obj["data"], dict):
        return "data is not an object"
    return None


def _known_kind(kind: str) -> bool:
    """Whether ``kind`` is a kind name (remembered once it matched)."""
    if not KIND.fullmatch(kind):
        return False
    if len(_KINDS_SEEN) < 4096:
        _KINDS_SEEN.add(kind)
    return True


def check_line(body: bytes) -> tuple[dict[str, Any] | None, LineProblem | None, str]:
    """Parse one line's bytes (without its newline) strictly.

    Returns ``(object, reason, detail)``: the object when it parsed as JSON (else
    None), and a break reason (``invalid-json``, ``bad-envelope``,
    ``non-canonical``) or None when the line is a valid, canonical envelope.
    """
    try:
        obj = _loads(body)
    except (ValueError, UnicodeDecodeError) as error:
        return None, "invalid-json", str(error)[:120]
    problem = _envelope_problem(obj)
    if problem is not None:
        return (obj if isinstance(obj, dict) else None), "bad-envelope", problem
    if canonical(obj).encode("utf-8") != body:
        return obj, "non-canonical", "the bytes differ from the canonical serialisation"
    return obj, None, ""


def parse_event(body: bytes, offset: int) -> Event | None:
    """The event of one line's bytes (without its newline), or None when the line
    is not an envelope. Canonical form is not checked (that is verify's job)."""
    try:
        obj = _loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    if _envelope_problem(obj) is not None:
        return None
    return event_from_object(obj, sha256_hex(body), offset)


def event_from_object(obj: Mapping[str, Any], digest: str, offset: int) -> Event:
    """The `Event` of a parsed line whose envelope was checked."""
    return Event(  # by position (the fields' order): a third cheaper than by name
        obj["seq"],
        obj["ts"],
        obj["prev"],
        obj["turn"],
        obj["kind"],
        obj["key"],
        obj["data"],
        obj["v"],
        digest,
        offset,
    )


class Upgrades:
    """A registry of in-memory migrations from an old kind to its successor.

    ``register("draft.placed", "draft.placed.2", fn)`` makes every reader that
    is given this registry see old ``draft.placed`` lines as ``draft.placed.2``
    with ``fn(data)`` as their data; chains (``a -> a.2 -> a.3``) are followed.
    The envelope (seq, prev, hash, offset) stays as written.
    """

    def __init__(self) -> None:
        self._steps: dict[str, tuple[str, Upgrade]] = {}

    def register(self, old_kind: str, new_kind: str, fn: Upgrade) -> None:
        """Add the step ``old_kind -> new_kind`` (one successor per kind, no cycles)."""
        for name in (old_kind, new_kind):
            if not KIND.fullmatch(name):
                raise LedgerError(
                    "HZL032", f"{name!r} is not a kind name", "use dotted lowercase names"
                )
        if old_kind in self._steps:
            raise LedgerError(
                "HZL032",
                f"{old_kind} already upgrades to {self._steps[old_kind][0]}",
                "register one successor per kind; chain further steps from the new kind",
            )
        kind: str | None = new_kind
        while kind is not None:
            if kind == old_kind:
                raise LedgerError(
                    "HZL032",
                    f"upgrading {old_kind} to {new_kind} would loop",
                    "upgrades go from old kinds to new ones only",
                )
            kind = self._steps[kind][0] if kind in self._steps else None
        self._steps[old_kind] = (new_kind, fn)

    def __contains__(self, kind: object) -> bool:
        """Whether lines of ``kind`` are upgraded (it has a successor)."""
        return kind in self._steps

    def upgrade(self, event: Event) -> Event:
        """``event`` migrated to the newest kind its registry knows."""
        while event.kind in self._steps:
            new_kind, fn = self._steps[event.kind]
            event = replace(event, kind=new_kind, data=dict(fn(event.data)))
        return event


SPINE_NAME = "session.jsonl"
"""The spine's file name inside its session directory."""


def spine_file(path: Path) -> Path:
    """The spine file named by ``path``: the file itself, or ``<directory>/session.jsonl``.

    Every reader (`read_events`, `verify`, ``machines.SpineIndex.scan``) and
    `Spine.open` accept either, so a host can pass the directory everywhere.
    """
    path = Path(path)
    return path / SPINE_NAME if path.is_dir() else path


def iter_lines(path: Path, from_offset: int = 0) -> Iterator[tuple[int, bytes]]:
    """``(offset, bytes)`` of each line from ``from_offset``, newline included.

    The last item lacks its newline when the file ends in a torn tail. A missing
    file yields nothing.
    """
    try:
        fd = open_read(path)
    except FileNotFoundError:
        return
    with os.fdopen(fd, "rb") as handle:
        if from_offset:
            size = os.fstat(fd).st_size
            if from_offset > size or os.pread(fd, 1, from_offset - 1) != b"\n":
                raise LedgerError(
                    "HZL031",
                    f"offset {from_offset} is not the start of a line of {path}",
                    "pass an Event.offset read from this spine, or 0",
                )
            handle.seek(from_offset)
        offset = from_offset
        for raw in handle:
            yield offset, raw
            offset += len(raw)


def read_events(
    path: Path,
    *,
    from_seq: int = 1,
    from_offset: int = 0,
    kinds: Collection[str] | None = None,
    upgrades: Upgrades | None = None,
    skip_damaged: bool = False,
    left_out: list[int] | None = None,
) -> Iterator[Event]:
    """The spine's events in order, each with its ``offset`` and line ``hash``.

    ``from_offset`` (an earlier event's offset) starts reading there without
    touching what comes before; ``from_seq`` skips events below that seq;
    ``kinds`` (after upgrading) keeps only kinds the reader knows. A torn tail is
    not yielded. A complete line that does not parse as an envelope is left out when
    the spine records its break as contained (a ``spine.break_contained`` naming its
    offset: `contained_offsets`), as a torn tail is; any other raises HZL030, unless
    ``skip_damaged`` (verify reports such lines by seq). The offset of each damaged line
    left out is added to ``left_out``, when given.
    """
    path = spine_file(path)
    contained: frozenset[int] | None = None
    for offset, raw in iter_lines(path, from_offset):
        if not raw.endswith(b"\n"):
            return
        event = parse_event(raw[:-1], offset)
        if event is None:
            if contained is None and not skip_damaged:
                contained = contained_offsets(path)  # read once, and only for damage
            if skip_damaged or (contained is not None and offset in contained):
                if left_out is not None:
                    left_out.append(offset)
                continue
            raise LedgerError(
                "HZL030",
                f"the line at byte {offset} of {path} is not a spine envelope",
                "run verify on this spine to see the break; the spine's writer records it "
                "(Spine.verify: spine.break_contained) and readers then leave the line out",
            )
        if event.seq < from_seq:
            continue
        if upgrades is not None:
            event = upgrades.upgrade(event)
        if kinds is None or event.kind in kinds:
            yield event


_BREAK_CONTAINED = b'"kind":"spine.break_contained"'


def contained_offsets(path: Path) -> frozenset[int]:
    """The byte offsets of the lines whose break the spine at ``path`` records as
    contained (``spine.break_contained``, written by `Spine.verify` or `Spine.open`):
    lines readers leave out. One pass over the file, parsing only those lines."""
    found: set[int] = set()
    for _, raw in iter_lines(spine_file(path)):
        if _BREAK_CONTAINED not in raw or not raw.endswith(b"\n"):
            continue
        event = parse_event(raw[:-1], 0)
        if event is not None and event.kind == "spine.break_contained":
            offset = event.data.get("offset")
            if isinstance(offset, int) and not isinstance(offset, bool):
                found.add(offset)
    return frozenset(found)
