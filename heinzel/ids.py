"""Identity: Heinzelmännchen ids and name slugs.

An id is ``hz-`` and a 26-character ULID minted from the injected clock (never the wall
clock): the directory name and the key everywhere, never reused. Ids minted by one process
are strictly increasing, even within one millisecond or when the clock steps back, so they
sort in minting order and never collide. A name is a slug shown to people, unique per
namespace and renamable; `validate_name` refuses anything else with a coded error.
"""

from __future__ import annotations

import re
import threading
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ulid import ULIDGenerator

from heinzel.errors import HeinzelError
from ledger.event import Clock

__all__ = [
    "ID_PREFIX",
    "NAME_MAX",
    "IdMinter",
    "id_time",
    "is_id",
    "is_slug",
    "new_id",
    "validate_name",
]

ID_PREFIX = "hz-"
NAME_MAX = 64

_ID = re.compile(r"^hz-[0-9A-HJKMNP-TV-Z]{26}$")
_IDS = re.compile(r"(?<![^\0])hz-[0-9A-HJKMNP-TV-Z]{26}(?![^\0])")
"""`_ID` within names joined by NUL (which no file name holds): `ids_among`."""
_SLUG = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")


class IdMinter:
    """Mints ids from a clock, each strictly after the previous one it minted.

    When the clock reads earlier than the last id's millisecond (a fixed ``HZ_NOW``, a
    clock stepped back), the id keeps the last millisecond so the order still holds.
    The process shares one minter behind `new_id`; tests may make their own.
    """

    def __init__(self) -> None:
        self._generator: ULIDGenerator | None = None  # python-ulid loads with the first id
        self._lock = threading.Lock()
        self._last_ms = 0

    def mint(self, clock: Clock) -> str:
        """A new id from ``clock`` (an aware datetime)."""
        moment = clock()
        if moment.tzinfo is None:
            raise HeinzelError(
                "HZH002", "the clock returned a naive datetime", "inject a clock returning UTC"
            )
        with self._lock:
            if self._generator is None:
                from ulid import ULIDGenerator

                self._generator = ULIDGenerator()
            self._last_ms = max(int(moment.timestamp() * 1000), self._last_ms)
            ulid = self._generator.generate(self._last_ms)
        return ID_PREFIX + str(ulid)


_MINTER = IdMinter()


def new_id(clock: Clock) -> str:
    """Mint a new id from ``clock``: strictly after every id this process minted before."""
    return _MINTER.mint(clock)


def id_time(text: str) -> datetime:
    """The moment an id was minted (its ULID's timestamp, UTC)."""
    if not is_id(text):
        raise HeinzelError("HZH003", f"not a Heinzelmännchen id: {text!r}", _ID_HINT)
    from ulid import ULID

    return ULID.from_str(text[len(ID_PREFIX) :]).datetime


def is_id(text: str) -> bool:
    """True when ``text`` is ``hz-`` and a canonical 26-character ULID."""
    return bool(_ID.fullmatch(text))


def ids_among(names: list[str]) -> list[str]:
    """The ``names`` that are ids (`is_id`), in their order: one regex over them all, not
    a call per name (a listing of ``heinzel/`` in a home of 10,000)."""
    return _IDS.findall("\0".join(names))


def is_slug(text: str) -> bool:
    """True when ``text`` is a name slug: lowercase letters, digits, single hyphens."""
    return len(text) <= NAME_MAX and bool(_SLUG.fullmatch(text))


def validate_name(text: str) -> str:
    """Return ``text`` when it is a valid name, else raise ``HZH001``."""
    if not is_slug(text):
        raise HeinzelError("HZH001", f"not a valid name: {text!r}", NAME_HINT)
    return text


NAME_HINT = (
    f"a name is a slug of at most {NAME_MAX} characters: lowercase letters and digits "
    "in words joined by single hyphens, starting with a letter (weekly-report)"
)
_ID_HINT = "an id is hz- followed by 26 characters of Crockford base32 (hz-01J...)"
