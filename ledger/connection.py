"""The index's connection: the part of sqlite-utils' ``Database`` hz calls, over sqlite3.

hz's projections and queries call five methods of a ``sqlite_utils.Database``:
``execute``, ``query``, ``executescript``, ``atomic`` and ``rollback`` (and ``conn``).
`IndexConnection` has those with sqlite-utils' meaning (a write outside a transaction
commits at once; a script inside one runs statement by statement, with no implicit
commit; ``atomic`` nests as a savepoint), so opening the index costs no import of
sqlite-utils, which loads click, dateutil, pluggy and tabulate (about 2x `python -c
pass` of CPU: an idle tick's largest import after pydantic). Any other attribute
(``table()``, ``db[name]``: what another program's `ledger.index.Projection` may use) is
the real ``Database`` on the same connection, made on first use.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlite_utils import Database

__all__ = ["IndexConnection"]

_CONTROL = frozenset({"BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE"})
"""Statements `IndexConnection.execute` never commits after (sqlite-utils' list)."""


def _first_keyword(sql: str) -> str:
    """The statement's first keyword, uppercased, past blanks, ``;`` and comments."""
    i, n = 0, len(sql)
    while i < n:
        if sql[i].isspace() or sql[i] in (";", "\ufeff"):
            i += 1
        elif sql.startswith("--", i):
            newline = sql.find("\n", i)
            if newline == -1:
                return ""
            i = newline + 1
        elif sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            if end == -1:
                return ""
            i = end + 2
        else:
            break
    j = i
    while j < n and (sql[j].isalpha() or sql[j] == "_"):
        j += 1
    return sql[i:j].upper()


def _statements(sql: str) -> Iterator[str]:
    """The complete statements of a script, in order (a ``;`` inside a string or a
    trigger's body does not end one: `sqlite3.complete_statement` says)."""
    start = 0
    for end, char in enumerate(sql):
        if char == ";" and sqlite3.complete_statement(sql[start : end + 1]):
            statement = sql[start : end + 1].strip()
            if statement:
                yield statement
            start = end + 1
    rest = sql[start:].strip()
    if rest:
        yield rest


class IndexConnection:
    """A sqlite3 connection with the methods of ``sqlite_utils.Database`` hz uses."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._database: Database | None = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_database":
            raise AttributeError(name)
        if self._database is None:
            from sqlite_utils import Database

            self._database = Database(self.conn, execute_plugins=False)
        return getattr(self._database, name)

    def __getitem__(self, name: str) -> Any:
        """``db[name]``: the real ``Database``'s table or view ``name`` (sqlite-utils loaded
        on first use, as for any other attribute)."""
        return self.__getattr__("table")(name)

    def execute(
        self, sql: str, parameters: Sequence[Any] | dict[str, Any] | None = None
    ) -> sqlite3.Cursor:
        """Run one statement; a write outside a transaction is committed at once."""
        conn = self.conn
        was_in_transaction = conn.in_transaction
        try:
            cursor = conn.execute(sql) if parameters is None else conn.execute(sql, parameters)
        except Exception:
            if not was_in_transaction and conn.in_transaction:
                conn.execute("ROLLBACK")  # the failed statement's implicit transaction
            raise
        if (
            not was_in_transaction
            and conn.in_transaction
            and cursor.description is None
            and _first_keyword(sql) not in _CONTROL
        ):
            conn.execute("COMMIT")
        return cursor

    def query(
        self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None
    ) -> Iterator[dict[str, Any]]:
        """The rows of a ``SELECT`` as dicts; any other statement is sqlite-utils' own."""
        if _first_keyword(sql) not in ("SELECT", "WITH"):
            return self.__getattr__("query")(sql, params)  # type: ignore[no-any-return]
        cursor = self.conn.execute(sql, () if params is None else params)
        keys = [column[0] for column in cursor.description]
        if len(set(keys)) != len(keys):  # sqlite-utils renames the repeated ones
            return self.__getattr__("query")(sql, params)  # type: ignore[no-any-return]
        return (dict(zip(keys, row, strict=True)) for row in cursor)

    def executescript(self, sql: str) -> sqlite3.Cursor:
        """Run a script; inside a transaction statement by statement, committing nothing."""
        if not self.conn.in_transaction:
            return self.conn.executescript(sql)
        cursor = self.conn.cursor()
        for statement in _statements(sql):
            cursor.execute(statement)
        return cursor

    @contextlib.contextmanager
    def atomic(self) -> Iterator[IndexConnection]:
        """A transaction; nested, a savepoint of the outer one."""
        conn = self.conn
        if not conn.in_transaction:
            conn.execute("BEGIN")
            try:
                yield self
            except BaseException:
                self.rollback()
                raise
            try:
                conn.execute("COMMIT")
            except BaseException:
                self.rollback()
                raise
            return
        conn.execute('SAVEPOINT "hz_atomic"')
        try:
            yield self
        except BaseException:
            if conn.in_transaction:
                conn.execute('ROLLBACK TO SAVEPOINT "hz_atomic"')
                conn.execute('RELEASE SAVEPOINT "hz_atomic"')
            raise
        conn.execute('RELEASE SAVEPOINT "hz_atomic"')

    def rollback(self) -> None:
        """Roll back the open transaction; nothing when none is open."""
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")

    def close(self) -> None:
        self.conn.close()
