"""A listing as the index gives it: one tuple per row, and its JSON made from the tuples.

`hz heinzel list --json` over thousands prints one JSON document, one item a line
(`heinzel.cli.base.emit_lines`). Each line is made here straight from the SQL row's
values, with no dict per row: the keys in their sorted order, each value encoded as
`json.dumps(row, ensure_ascii=False, sort_keys=True)` encodes it in the dict
`Service.listing` gives, so the text is the same byte for byte. A value of a type the
fast form does not know (none the index stores today) makes that row's line through
`json.dumps` of its dict. The SQL does what `heinzel.index.queries.Queries` does per row
in Python: a retired one has no ``next_due``, ``cost_today`` counts only today.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from json.encoder import encode_basestring
from typing import Any

__all__ = ["LIST_SELECT", "Listing"]

LIST_SELECT = (
    "assets, contract_name, contract_version, "
    "CASE WHEN cost_day = ? THEN cost_today ELSE 0.0 END, fingerprint, id, last_turn, name, "
    "namespace, CASE WHEN state = 'retired' THEN NULL ELSE next_due END, pending, state"
)
"""A listing's columns in the JSON's key order (``notices`` comes between ``next_due``
and ``pending``, ``team`` last); its one parameter is today (``YYYY-MM-DD``)."""

_ASSETS, _CONTRACT_NAME, _VERSION, _COST, _FINGERPRINT, _ID = range(6)
_LAST_TURN, _NAME, _NAMESPACE, _NEXT_DUE, _PENDING, _STATE = range(6, 12)


class _Quoted(dict[Any, str]):
    """A text's JSON string (None: ``null``), made the first time it is asked: the values a
    listing repeats (a contract's name and fingerprint, a namespace, a state, a due slot)
    are escaped once, not once a row."""

    def __init__(self) -> None:
        super().__init__({None: "null"})

    def __missing__(self, key: Any) -> str:
        value = self[key] = encode_basestring(key)
        return value


_PLAIN_LIST = re.compile(r'\[(?:"[^"\\\x00-\x1f]*"(?:, "[^"\\\x00-\x1f]*")*)?\]').fullmatch
"""A JSON list of strings, in the form ``json.dumps`` writes it with ``ensure_ascii``
off: no escape in any string, ``", "`` between items. Such a text is its own encoding."""

_INF = float("inf")


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _number(value: Any) -> str:
    """An int or a finite float as json writes it (``repr``); anything else through it."""
    kind = type(value)
    if kind is int:
        return int.__repr__(value)
    if kind is float and -_INF < value < _INF:
        return float.__repr__(value)
    return _dumps(value)


def _with_cost(row: tuple[Any, ...], each: Mapping[str, float]) -> tuple[Any, ...]:
    return (*row[:_COST], each.get(str(row[_ID]), 0.0), *row[_COST + 1 :])


def _decoded(value: Any) -> Any:
    """A JSON column's value (``assets``, ``pending``) as `Queries` decodes it."""
    return json.loads(value) if isinstance(value, str) else value


class Listing:
    """A listing's rows (tuples of `LIST_SELECT`), each one's notices and, for a team one,
    what the team repository says of it; `dicts` or `json_items` from them."""

    def __init__(self, rows: Sequence[tuple[Any, ...]]) -> None:
        self.rows = list(rows)
        self.notices: Mapping[str, list[dict[str, str]]] = {}
        self.team: Mapping[str, Any] = {}
        self._json: dict[str, str] = {}  # a JSON column's text -> its encoding

    def __len__(self) -> int:
        return len(self.rows)

    def spent(self, each: Mapping[str, float]) -> None:
        """Today's spend of each row (id -> USD, `heinzel.session.spend.today_each`), in
        place of the index's ended turns' figure."""
        self.rows = [
            row if row[_COST] == each.get(str(row[_ID]), 0.0) else _with_cost(row, each)
            for row in self.rows
        ]

    def names(self) -> dict[str, str]:
        """id -> name, for `heinzel.index.notices.notices_by_id`."""
        return {str(row[_ID]): str(row[_NAME] or row[_ID]) for row in self.rows}

    def only(self, namespace: str) -> Listing:
        """The rows of one namespace, with their notices."""
        kept = Listing([row for row in self.rows if row[_NAMESPACE] == namespace])
        kept.notices = self.notices
        return kept

    def has_team(self) -> bool:
        return any(row[_NAMESPACE] == "team" for row in self.rows)

    def dicts(self) -> list[dict[str, Any]]:
        """The rows as `heinzel.service.Service.listing` gives them (and ``team`` where the
        team repository says something of one)."""
        return [self._dict(row) for row in self.rows]

    def _dict(self, row: tuple[Any, ...]) -> dict[str, Any]:
        heinzel_id = str(row[_ID])
        out = {
            "id": row[_ID],
            "name": row[_NAME],
            "namespace": row[_NAMESPACE],
            "state": row[_STATE],
            "contract_name": row[_CONTRACT_NAME],
            "contract_version": row[_VERSION],
            "fingerprint": row[_FINGERPRINT],
            "assets": _decoded(row[_ASSETS]),
            "next_due": row[_NEXT_DUE],
            "last_turn": row[_LAST_TURN],
            "pending": _decoded(row[_PENDING]),
            "cost_today": row[_COST],
            "notices": self.notices.get(heinzel_id, []),
        }
        if heinzel_id in self.team:
            out["team"] = self.team[heinzel_id]
        return out

    def json_items(self) -> Iterator[str]:
        """Each row's ``json.dumps(row, ensure_ascii=False, sort_keys=True)``, made by one
        f-string and no call of Python's own per value: a JSON column's text is looked up
        in `_json` (each distinct text encoded once), a text that repeats in `_Quoted`, an
        int or a finite float written by its ``repr``; the id and the name, each its own,
        are escaped per row."""
        notices, team, text = self.notices, self.team, encode_basestring
        encoded, column, integer, real = self._json, self._json_column, int, float
        quoted = _Quoted()
        for row in self.rows:
            (
                assets,
                contract_name,
                version,
                cost,
                fingerprint,
                heinzel_id,
                last_turn,
                name,
                namespace,
                next_due,
                pending,
                state,
            ) = row
            try:
                said = notices.get(heinzel_id)
                known = team.get(heinzel_id) if team else None
                listed = "null" if pending is None else encoded.get(pending) or column(pending)
                if version is None:
                    counted = "null"
                elif type(version) is integer:
                    counted = integer.__repr__(version)
                else:
                    counted = _number(version)
                if type(cost) is real and -_INF < cost < _INF:
                    spent = real.__repr__(cost)
                else:
                    spent = _number(cost)
                tail = "}" if known is None else f', "team": {_dumps(known)}}}'
                yield (
                    f'{{"assets": {encoded.get(assets) or column(assets)}, '
                    f'"contract_name": {quoted[contract_name]}, "contract_version": {counted}, '
                    f'"cost_today": {spent}, "fingerprint": {quoted[fingerprint]}, '
                    f'"id": {text(heinzel_id)}, "last_turn": {quoted[last_turn]}, '
                    f'"name": {text(name)}, "namespace": {quoted[namespace]}, '
                    f'"next_due": {quoted[next_due]}, '
                    f'"notices": {_dumps(said) if said else "[]"}, '
                    f'"pending": {listed}, "state": {quoted[state]}{tail}'
                )
            except TypeError:  # a value the fast form does not know: json says what it is
                yield _dumps(self._dict(row))

    def _json_column(self, value: Any) -> str:
        """A JSON column's text re-encoded (sorted keys, no ASCII escapes); a plain list of
        strings is already that, any other text is decoded and encoded once."""
        if value is None:
            return "null"
        if type(value) is not str:
            return _dumps(value)
        encoded = self._json.get(value)
        if encoded is None:  # each distinct text once (`json_items` looks it up first)
            plain = _PLAIN_LIST(value)
            encoded = self._json[value] = value if plain else _dumps(json.loads(value))
        return encoded
