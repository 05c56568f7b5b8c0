"""`DiskBody`: the durable `Body` for hosts, over `ledger.bodies.Bodies`, and one fsync
per step.

The rule every body keeps (see `machines.stores.journal.Body`): a `put` survives the
process when it returns, and the machine appends the hash that names the content
only after that. `DiskBody` keeps each turn's values as records ``{"kind":
"value", "hash", "value"}`` in ``<directory>/turns/<turn>.jsonl`` (one line per
record), so a killed process leaves either no hash in the spine or the content in the
file. The directory is usually the spine's own (`Spine.directory`); a turn id is then
also a file name (letters, digits, ``-``, ``_`` and ``.``: HZL040 otherwise).

Given the spine (``DiskBody(directory, spine=spine)``), the body and the spine share
their fsyncs as hz's own host does (`write_lazily`, docs/spine.md "One fsync per
step"): a record is written at once and fsynced when the turn parks or ends, before
the line that says so; the lines no act in the world waits for (`LAZY_KINDS`) are
held back and written with the next line; ``turn.started`` is written at once and
fsynced with the next line. A durable step then costs one fsync, its own line's.
Without the spine each record is fsynced on append (two fsyncs per step).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ledger.bodies import Bodies
from ledger.event import Event
from ledger.spine import Spine
from machines.crashkit.crash import body_crash_hook, body_sync_crash_hook

__all__ = ["BODY_SYNC_KINDS", "LAZY_KINDS", "UNSYNCED_KINDS", "DiskBody", "write_lazily"]

LAZY_KINDS = frozenset({"step.started", "step.tool", "effect.done", "draft.placed"})
"""The lines of a turn no act in the world waits for: held back and written with the
next line of another kind (``model.request``, ``effect.started``, ``tool.result``, an
effect's own event, the turn's end) in one write and one fsync, or by the ``durable``
`write_lazily` returns. docs/spine.md ("One fsync per step") gives the reason for each."""

UNSYNCED_KINDS = frozenset({"turn.started"})
"""Lines written at once (other processes see the turn running) whose fsync is the next
line's: nothing acts in the world between a turn's start and its first fsynced line."""

BODY_SYNC_KINDS = frozenset({"turn.finished", "turn.waiting", "turn.skipped"})
"""The lines before which the turn's body is fsynced (once): the turn parks or ends,
and its content should outlive a power cut. Between them a body record is only
written: a power cut may take it, and the machine regains a lost step input by
rerunning the step that produced it (`machines.core.runner`, ``turn.resumed{regained}``)."""


def write_lazily(spine: Spine, bodies: Bodies) -> Callable[[], None]:
    """Let a turn's spine and body share their fsyncs (docs/spine.md, "One fsync per
    step"); returns the turn's ``durable``: every line and record so far on disk.
    ``bodies`` should defer its fsyncs (``Bodies(defer_fsync=True)``)."""

    def sync_bodies(events: Sequence[Event]) -> None:
        for event in events:  # a loop, not any(): most writes are one line
            if event.kind in BODY_SYNC_KINDS:
                bodies.sync()
                return

    def durable() -> None:
        bodies.sync()
        spine.sync()

    spine.before_write(sync_bodies)
    spine.defer(LAZY_KINDS)
    spine.unsynced(UNSYNCED_KINDS)
    return durable


class DiskBody:
    """A `Body` kept on disk, written on `put`'s return (idempotent per digest).

    ``spine``: the spine this body's turns write to; the body then defers its fsyncs to
    the lines that need them and the spine holds back its lazy lines (`write_lazily`),
    one fsync per step. Given a `Bodies` instead of a directory, the body uses it as it
    is (its ``defer_fsync`` and hooks are the caller's).
    """

    def __init__(self, bodies: Bodies | Path, *, spine: Spine | None = None) -> None:
        if isinstance(bodies, Bodies):
            self.bodies = bodies
        elif spine is None:
            self.bodies = Bodies(Path(bodies))
        else:
            cut = spine.simulate_power_cut
            self.bodies = Bodies(
                Path(bodies),
                defer_fsync=True,
                on_write=body_crash_hook(power_cut=cut),
                on_sync=body_sync_crash_hook(power_cut=cut),
            )
        self.durable: Callable[[], None] = self.bodies.sync
        """Every record (and with a spine, every line) so far on disk: call it before an
        act in the world the machine does not see (the machine's own effects, model
        requests and unsafe tool calls need no call)."""
        if spine is not None:
            self.durable = write_lazily(spine, self.bodies)
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
        self.bodies.add(turn, {"kind": "value", "hash": digest, "value": value})
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
