"""`DiskBody`: the durable `Body` for hosts, over `ledger.bodies.Bodies`.

The rule every body keeps (see `machines.journal.Body`): a `put` survives the
process when it returns, and the machine appends the hash that names the content
only after that. `DiskBody` keeps each turn's values as records ``{"kind":
"value", "hash", "value"}`` in ``<directory>/turns/<turn>.jsonl`` (one line per
record, fsynced on append unless its `Bodies` defers the fsync), so a killed
process leaves either no hash in the spine or the content in the file.
The directory is usually the spine's own (`Spine.directory`); a turn id is then
also a file name (letters, digits, ``-``, ``_`` and ``.``: HZL040 otherwise).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ledger.bodies import Bodies


class DiskBody:
    """A `Body` kept on disk, written on `put`'s return (idempotent per digest)."""

    def __init__(self, bodies: Bodies | Path) -> None:
        self.bodies = bodies if isinstance(bodies, Bodies) else Bodies(Path(bodies))
        self._cache: dict[tuple[str, str], Any] = {}
        self._loaded: set[str] = set()
        """Turns whose body was read once: later puts append without reading it again."""

    def _load(self, turn: str) -> None:
        for record in self.bodies.read(turn) or []:
            if record.get("kind") == "value":
                self._cache[(turn, str(record.get("hash")))] = record.get("value")
        self._loaded.add(turn)

    def put(self, turn: str, digest: str, value: Any) -> None:
        """Keep ``value`` under ``digest`` (once per turn and digest).

        The turn's body is read once, at its first put (a resumed turn's earlier
        values); after that a put is one append.
        """
        if turn not in self._loaded:
            self._load(turn)
        if (turn, digest) in self._cache:
            return
        self.bodies.append(turn, {"kind": "value", "hash": digest, "value": value})
        self._cache[(turn, digest)] = value

    def get(self, turn: str, digest: str) -> Any:
        """The value under ``digest``; `KeyError` when the body no longer has it."""
        if (turn, digest) not in self._cache:
            self._load(turn)
        return self._cache[(turn, digest)]

    def close(self, turn: str | None = None) -> None:
        """Close the open body of ``turn`` (all when None): at the turn's end."""
        self.bodies.close(turn)

    def records(self, turn: str) -> list[dict[str, Any]]:
        """Every record of the turn's body (a host may keep its own kinds beside)."""
        return self.bodies.read(turn) or []
