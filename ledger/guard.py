"""The content guard: what a spine line may carry.

The spine holds ids, hashes, sizes, costs, dispositions and the few short texts
a user is meant to read; content (drafts, inputs, model messages) lives in the
turn bodies. Before anything is written, `checked_data` walks the payload at
every depth and refuses (nothing is written):

- a field named ``text``, ``draft``, ``transcript``, ``body``, ``content``,
  ``prompt`` or ``messages`` (any letter case), whatever it holds (HZL020);
- any string, key or value, that looks like an email address (HZL021);
- a string longer than `MAX_PLAIN` characters, unless the field that holds it
  (the nearest mapping key above it, so a list under a declared field counts) is
  declared in ``short_text``; a declared field's strings are capped at
  `MAX_SHORT_TEXT` characters (HZL022);
- anything that is not plain JSON: non-string keys, floats that are NaN or
  infinite, bytes, sets, objects (HZL023).

The walk returns a plain copy (dicts, lists, str, int, float, bool, None), so an
event appended equals the same event read back.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping
from typing import Any

from ledger.errors import LedgerError
from ledger.reading import KIND

__all__ = [
    "FORBIDDEN_FIELDS",
    "MAX_LINE",
    "MAX_PLAIN",
    "MAX_SHORT_TEXT",
    "check_label",
    "check_line_size",
    "checked_append",
    "checked_data",
    "looks_like_email",
]

FORBIDDEN_FIELDS = frozenset(
    {"text", "draft", "transcript", "body", "content", "prompt", "messages"}
)
MAX_PLAIN = 200
MAX_SHORT_TEXT = 1000
MAX_LINE = 65536
"""The most bytes one event's line may take, its newline included (HZL025)."""

_EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![A-Za-z0-9-])"
)


def looks_like_email(value: str) -> bool:
    """Whether ``value`` contains something shaped like ``name@host.tld``."""
    return "@" in value and _EMAIL.search(value) is not None


def check_label(name: str, value: str | None) -> None:
    """The rule for a line's ``turn`` or ``key`` (the spine's and every journal's): None,
    or a one-line string of 1 to `MAX_PLAIN` characters holding no e-mail address
    (HZL024, HZL021)."""
    if value is None:
        return
    if not isinstance(value, str) or not value or len(value) > MAX_PLAIN or "\n" in value:
        raise LedgerError(
            "HZL024",
            f"{name} {value!r} is not a one-line string of 1 to {MAX_PLAIN} characters",
            f"pass a short id as {name}, or None",
        )
    if looks_like_email(value):
        raise LedgerError(
            "HZL021", f"{name} holds an email address; the spine never does", "use an id"
        )


def checked_append(
    kind: str,
    data: Mapping[str, Any] | None,
    *,
    turn: str | None,
    key: str | None,
    short_text: Collection[str] = (),
) -> dict[str, Any]:
    """The check every store makes before it appends an event (the spine's and every
    journal's, so one bad event is refused with one code wherever it goes): the kind a
    dotted lowercase name (HZL024), ``turn`` and ``key`` by `check_label`, ``data`` by
    `checked_data`; its plain copy of ``data``. Nothing is written when it raises."""
    if type(kind) is not str or kind not in _KINDS_PASSED:
        if not isinstance(kind, str) or not KIND.fullmatch(kind):
            raise LedgerError(
                "HZL024",
                f"{kind!r} is not an event kind",
                "kinds are dotted lowercase names such as turn.started or draft.placed.2",
            )
        if len(_KINDS_PASSED) < 4096:
            _KINDS_PASSED.add(kind)
    if type(turn) is not str or turn not in _LABELS_PASSED:
        check_label("turn", turn)
        if turn is not None and len(_LABELS_PASSED) < 4096:
            _LABELS_PASSED.add(turn)
    check_label("key", key)
    return checked_data(data, short_text)


_KINDS_PASSED: set[str] = set()
"""Kinds that passed the pattern (a process writes a few dozen): the next line of one skips
it."""

_LABELS_PASSED: set[str] = set()
"""Turn ids that passed `check_label` (every line of a turn names it): the next line of
the turn skips it."""


def check_line_size(kind: str, size: int) -> None:
    """The size rule of an event's line (``size`` bytes with its newline), once the store
    has made it: at most `MAX_LINE` (HZL025)."""
    if size > MAX_LINE:
        raise LedgerError(
            "HZL025",
            f"a {kind} line would be {size} bytes; a spine line holds at most {MAX_LINE}",
            "keep large payloads in the turn body and record their hash",
        )


def _where(path: tuple[str | int, ...]) -> str:
    return "data" + "".join(f"[{part!r}]" for part in path)


def _check_string(
    value: str, field: str | None, short_text: Collection[str], path: tuple[str | int, ...]
) -> None:
    if field is not None and field in short_text:
        if len(value) > MAX_SHORT_TEXT:
            raise LedgerError(
                "HZL022",
                f"{_where(path)} is {len(value)} characters; "
                f"a short text holds at most {MAX_SHORT_TEXT}",
                "shorten it, or keep the full text in the turn body and record its hash",
            )
    elif len(value) > MAX_PLAIN:
        raise LedgerError(
            "HZL022",
            f"{_where(path)} is {len(value)} characters; a plain field holds at most {MAX_PLAIN}",
            "declare the field in short_text if a user is meant to read it, "
            "otherwise keep it in the turn body and record its hash",
        )
    if looks_like_email(value):
        raise LedgerError(
            "HZL021",
            f"{_where(path)} holds an email address; the spine never does",
            "record an id or a hash of the address; keep the address in the turn body",
        )


_SCALARS = (type(None), bool, int)

_PASSED_KEYS: set[str] = set()
"""Keys that passed `_check_key` (a key's checks do not depend on where it is): the
same few field names recur on every line, so each is checked once per process."""
_MAX_PASSED_KEYS = 4096


def _check_key(key: Any, path: tuple[str | int, ...]) -> None:
    """A mapping key: a string, not a content field's name, short, no email address."""
    if type(key) is not str:
        raise LedgerError(
            "HZL023",
            f"{_where(path)} has the key {key!r}; JSON keys are strings",
            "use string keys",
        )
    if key.lower() in FORBIDDEN_FIELDS:
        raise LedgerError(
            "HZL020",
            f"{_where((*path, key))}: a field named {key!r} may not be in the spine",
            "content belongs in the turn body (Bodies.append); "
            "record its hash and size in the spine",
        )
    _check_string(key, None, (), path)
    if len(_PASSED_KEYS) < _MAX_PASSED_KEYS:
        _PASSED_KEYS.add(key)


def _walk(
    value: Any, field: str | None, path: tuple[str | int, ...], short_text: Collection[str]
) -> Any:
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is str:
        _check_string(value, field, short_text, path)
        return value
    if kind is dict or isinstance(value, Mapping):
        copy: dict[str, Any] = {}
        for key, item in value.items():
            if type(key) is not str or key not in _PASSED_KEYS:
                _check_key(key, path)
            kind = type(item)
            if kind in _SCALARS or (kind is str and len(item) <= MAX_PLAIN and "@" not in item):
                copy[key] = item  # a short string without "@" passes every check
            else:
                copy[key] = _walk(item, key, (*path, key), short_text)
        return copy
    if isinstance(value, list | tuple):
        return [_walk(item, field, (*path, index), short_text) for index, item in enumerate(value)]
    if isinstance(value, float):
        if not math.isfinite(value):
            raise LedgerError(
                "HZL023", f"{_where(path)} is {value}, not a JSON number", "record a finite number"
            )
        return float(value)
    if isinstance(value, str):  # a StrEnum member, say: recorded as its plain value
        plain = str.__str__(value)
        _check_string(plain, field, short_text, path)
        return plain
    if isinstance(value, int):
        return int(value)
    raise LedgerError(
        "HZL023",
        f"{_where(path)} is a {type(value).__name__}, not JSON",
        "record strings, numbers, booleans, null, lists and objects only",
    )


def checked_data(
    data: Mapping[str, Any] | None, short_text: Collection[str] = ()
) -> dict[str, Any]:
    """A plain JSON copy of ``data``, or a coded LedgerError naming the first offence."""
    if data is None:
        return {}
    if type(data) is not dict and not isinstance(data, Mapping):
        raise LedgerError(
            "HZL023",
            f"an event's data is a {type(data).__name__}, not an object",
            "pass a mapping",
        )
    result: dict[str, Any] = _walk(data, None, (), frozenset(short_text))
    return result
