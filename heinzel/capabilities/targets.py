"""The places no input reads and no draft is written to: hz's own files.

A ``file:`` output that resolved into ``HZ_HOME`` would let the documents adapter replace a
spine (its own, or another Heinzelmännchen's) atomically with a draft appended: the
spine's writer then appends to the unlinked file and those lines are lost. An input that
resolved into the credential store's folder would hand the model the user's keys. So a path
is refused when, after ``~``, the contract's folder, ``..`` and every symlink are resolved
(``os.path.realpath``), it lies in one of the `Protected` places:

- hz's folders in its home (``HZ_HOME``'s ``heinzel/``, ``web/`` and ``team/``) and the
  credential store's folder (``<config dir>/hz/``, or the file ``HZ_CREDENTIALS`` names),
  which the caller passes in;
- the ``heinzel/`` folder of any home on this machine, found by its layout: a folder
  ``heinzel`` holding ``index.sqlite``, or a session folder ``heinzel/hz-<ULID>/`` (the
  spines, bodies and index of another ``HZ_HOME``, or of this one moved).

The check runs where a contract is accepted (``hz heinzel new``, ``amend``, ``approve``:
`heinzel.store.targets`) and again where the adapters read and write, so a symlink
planted after approval, or a home moved later, is refused then (``HZH342``, ``HZH343``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from heinzel.capabilities.errors import CapabilityError
from heinzel.ids import is_id
from ledger.records import frozen_record

__all__ = ["Protected", "real_path"]


def real_path(path: Path | str) -> str:
    """``path`` with ``~`` expanded and every link and ``..`` resolved (what is there is
    followed; the rest of the path is taken as written)."""
    return os.path.realpath(os.path.expanduser(path))


@frozen_record
class _Place:
    path: str
    what: str
    inside: str
    """``path`` and a separator: what a path inside it starts with."""


class Protected:
    """hz's own places: ``places`` is (path, what it is) for the home and the credential
    store; any home's ``heinzel/`` folder is protected by its layout whatever is passed.
    Paths are compared as strings (a check costs a ``realpath`` and a ``stat``: the tick
    asks it of every placed draft)."""

    def __init__(self, places: Iterable[tuple[Path | str, str]] = ()) -> None:
        self._places = tuple(
            _Place(real, what, os.path.join(real, ""))
            for real, what in ((real_path(path), what) for path, what in places)
        )

    def refusal(self, path: Path | str) -> str | None:
        """Why ``path`` is one of hz's own places (``<real path>, inside ...``), or None.
        A hard link has no path to resolve: a file with several names is compared by inode
        with the places that are files (the credentials file)."""
        real = real_path(path)
        for place in self._places:
            if real == place.path or real.startswith(place.inside):
                return f"{real}, inside {place.what} ({place.path})"
        home = _home_of(real)
        if home is not None:
            return f"{real}, inside the hz home {home} (its spines, bodies and index)"
        try:
            info = os.stat(real)
        except OSError:
            return None
        if info.st_nlink > 1:
            for place in self._places:
                if _same_file(info, place.path):
                    return f"{real}, a hard link to {place.what} ({place.path})"
        return None

    def check_read(self, path: Path | str, shown: str) -> None:
        """HZH343 when an input would read one of hz's own places."""
        why = self.refusal(path)
        if why is not None:
            raise CapabilityError(
                "HZH343",
                f"{shown} resolves to {why}, which no input reads",
                "point the input at a file of your own: remove the link, or amend the "
                "contract (`hz heinzel amend NAME --from FILE`)",
            )

    def check_write(self, path: Path | str, shown: str) -> None:
        """HZH342 when a draft would be written into one of hz's own places."""
        why = self.refusal(path)
        if why is not None:
            raise CapabilityError(
                "HZH342",
                f"{shown} resolves to {why}, where no draft goes "
                "(a link or a moved folder points it there)",
                "point the document back at a file of your own (remove the link), "
                "then wake the Heinzelmännchen again",
            )


def _same_file(info: os.stat_result, path: str) -> bool:
    try:
        other = os.stat(path)
    except OSError:
        return False
    return (info.st_dev, info.st_ino) == (other.st_dev, other.st_ino)


def _home_of(real: str) -> str | None:
    """The home whose ``heinzel/`` folder holds ``real``, by the layout alone: a session
    folder ``heinzel/hz-<ULID>/``, or a ``heinzel/`` folder holding ``index.sqlite``."""
    parts = real.split(os.sep)
    for at, part in enumerate(parts):
        if part != "heinzel":
            continue
        home = os.sep.join(parts[:at]) or os.sep
        if at + 1 < len(parts) and is_id(parts[at + 1]):
            return home
        if os.path.exists(os.path.join(os.sep.join(parts[: at + 1]), "index.sqlite")):
            return home
    return None
