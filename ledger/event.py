"""One spine line: the envelope ``v, seq, ts, prev, turn, kind, key, data``.

The serialisation is fixed (other tools read it): canonical JSON,
``json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)``
followed by ``\\n``. ``prev`` is the lowercase hex SHA-256 of the previous line's
bytes without its newline, ``None`` on the first line.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import field
from datetime import UTC, datetime
from typing import Any

from ledger.records import frozen_record

ENVELOPE_VERSION = 1
ENVELOPE_KEYS = ("v", "seq", "ts", "prev", "turn", "kind", "key", "data")

Clock = Callable[[], datetime]
"""The one injected clock: returns an aware datetime (UTC)."""


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
"""The one encoder every canonical text comes from, built once: ``json.dumps`` with these
arguments builds an encoder per call, which cost a fifth of a spine line's serialisation."""


_STRING = json.encoder.encode_basestring
"""The string encoder of `_CANONICAL` (``ensure_ascii=False``): quotes and escapes."""
_MAKE_ENCODER = getattr(json.encoder, "c_make_encoder", None)  # None without _json


def canonical(obj: Any) -> str:
    """Canonical JSON text of ``obj`` (no trailing newline): the same text as
    ``json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)``.

    The C encoder is made here directly, with a fresh circular-reference check, as
    `_CANONICAL.iterencode` would make it, without that method's own Python work (a
    step hashes its result and writes its body record through this)."""
    if _MAKE_ENCODER is None:
        return "".join(_CANONICAL.iterencode(obj, _one_shot=True))
    encode = _MAKE_ENCODER({}, _CANONICAL.default, _STRING, None, ":", ",", True, False, True)
    return "".join(encode(obj, 0))


_DATA = (
    None
    if _MAKE_ENCODER is None
    else _MAKE_ENCODER(None, _CANONICAL.default, _STRING, None, ":", ",", True, False, True)
)
"""`_CANONICAL`'s C encoder, made once rather than per call (as ``iterencode`` does), with
no check for circular data: what it encodes is the guard's plain copy of a line's data
(`ledger.guard.checked_data`), which has none."""


def _data_text(data: Mapping[str, Any]) -> str:
    return canonical(data) if _DATA is None else "".join(_DATA(data, 0))


def envelope_text(
    seq: int,
    ts: str,
    prev: str | None,
    *,
    turn: str | None,
    kind: str,
    key: str | None,
    data: Mapping[str, Any],
) -> str:
    """The canonical text of a line's envelope (``v`` 1): the same text as `canonical` of
    the envelope's object, its keys written in their sorted order around the data's own
    canonical text rather than sorted and encoded on each line (a spine append's largest
    cost after the fsync)."""
    text = _STRING  # each string field inline: a function call apiece cost more than it
    return (
        f'{{"data":{_data_text(data)},"key":{"null" if key is None else text(key)},'
        f'"kind":{"null" if kind is None else text(kind)},'
        f'"prev":{"null" if prev is None else text(prev)},"seq":{int(seq)},'
        f'"ts":{"null" if ts is None else text(ts)},'
        f'"turn":{"null" if turn is None else text(turn)},"v":1}}'
    )


def sha256_hex(data: bytes) -> str:
    """Lowercase hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def format_ts(moment: datetime) -> str:
    """UTC ISO 8601 with milliseconds, ending in ``Z``: ``2026-10-30T15:00:00.000Z``."""
    if moment.tzinfo is None:
        raise ValueError("the clock must return an aware datetime")
    utc = moment.astimezone(UTC)
    if utc.year < 1000:  # strftime writes such a year without its leading zeros
        return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"
    # the same text as strftime's, at a fraction of its cost (it is on every spine line):
    # two- and three-digit fields looked up, not formatted
    return (
        f"{utc.year:04d}-{_TWO[utc.month]}-{_TWO[utc.day]}T{_TWO[utc.hour]}:"
        f"{_TWO[utc.minute]}:{_TWO[utc.second]}.{_THREE[utc.microsecond // 1000]}Z"
    )


_TWO = tuple(f"{n:02d}" for n in range(100))
_THREE = tuple(f"{n:03d}" for n in range(1000))


@functools.lru_cache(maxsize=1024)
def parse_ts(text: str) -> datetime:
    """The inverse of `format_ts` (accepts any ISO 8601 with ``Z`` or an offset).
    Remembered: a turn's fold parses each line's time again and again (a datetime is
    immutable, so a remembered one is as good as a new one)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


@frozen_record
class Event:
    """A spine line as read or appended. ``hash`` is the SHA-256 of the line's bytes
    without its newline (the next line's ``prev``); ``offset`` is where the line
    starts in the file (0 for events that never lived in a file)."""

    seq: int
    ts: str
    prev: str | None
    turn: str | None
    kind: str
    key: str | None
    data: Mapping[str, Any]
    v: int = ENVELOPE_VERSION
    hash: str = field(default="", compare=False)
    offset: int = field(default=0, compare=False)
    size: int = field(default=0, compare=False)
    """The line's length in bytes, newline included (0 when not known): ``offset + size``
    is where the next line starts, the spine's size when this line is its last."""

    def envelope(self) -> dict[str, Any]:
        """The line's object, in the fixed key set."""
        return {
            "v": self.v,
            "seq": self.seq,
            "ts": self.ts,
            "prev": self.prev,
            "turn": self.turn,
            "kind": self.kind,
            "key": self.key,
            "data": dict(self.data),
        }

    def line(self) -> bytes:
        """The line's bytes, newline included."""
        return (canonical(self.envelope()) + "\n").encode("utf-8")


def make_event(
    *,
    seq: int,
    ts: str,
    prev: str | None,
    kind: str,
    data: Mapping[str, Any],
    turn: str | None = None,
    key: str | None = None,
    offset: int = 0,
) -> Event:
    """Build an event and compute its line hash."""
    draft = Event(seq=seq, ts=ts, prev=prev, turn=turn, kind=kind, key=key, data=data)
    line = draft.line()
    digest = sha256_hex(line[:-1])
    return Event(
        seq=seq,
        ts=ts,
        prev=prev,
        turn=turn,
        kind=kind,
        key=key,
        data=data,
        hash=digest,
        offset=offset,
        size=len(line),
    )
