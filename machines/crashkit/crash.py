"""Crash points for tests: ``HZ_CRASH_AT`` makes the process ``os._exit(137)``.

``after:<kind>``: right after the first event of that kind is durable (a ``step.started``
  or an effect's end a line carries, docs/spine.md, is durable with that line).
``append:<n>``: right after the n-th append of this process.
``before-index:<kind>``: right after that kind is durable in the spine and before the
index has seen it (the host installs ``crash_hook(early=True)`` before its index hook).
``at:<name>``: at a named point in a host's code, where no event is written (`crash_at`);
hz's is ``at:staged``, after the tick wrote its source cache and before any wake.
``body:<n>``: right after the n-th turn-body record of this process is written, before
any spine line names it (`body_crash_hook`, a ``Bodies`` ``on_write``).
``body-lost:<n>``: the same, and the body's records and the spine's lines not yet
fsynced are cut off first, as a power cut may lose them.
``body-sync:<n>``: at the n-th sync of the turn's bodies, once the bodies are fsynced and
while the ``turns/`` directory's fsync, run beside them, may not have ended
(`body_sync_crash_hook`, a ``Bodies`` ``on_sync``); ``body-sync-lost:<n>`` first removes
the bodies created since the directory's last fsync and cuts the spine back to its last
fsync, as a power cut before the directory's fsync ended may.
A no-op unless the variable is set. Hosts install `crash_hook` as an
``on_durable`` callback of their spine (the in-memory journal calls it too), so the
exit happens after the fsync and before anything else runs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

from ledger.event import Event
from ledger.records import frozen_record
from machines.errors import MachineError
from machines.stores.journal import expand_carried

CRASH_EXIT = 137
"""The exit status of a crash point (as a SIGKILL would give)."""


@frozen_record
class CrashPoint:
    """A parsed ``HZ_CRASH_AT``: after the kind ``kind``, or after append number ``n``."""

    kind: str | None = None
    n: int | None = None
    early: bool = False
    name: str | None = None
    body: bool = False
    """A body-write point (``body:<n>``, ``body-lost:<n>``), not a spine one."""
    lost: bool = False
    sync: bool = False
    """A body-sync point (``body-sync:<n>``, ``body-sync-lost:<n>``)."""


def parse(value: str) -> CrashPoint:
    """Parse ``after:<kind>`` or ``append:<n>`` (HZM050 for anything else)."""
    how, _, what = value.partition(":")
    if how == "after" and what:
        return CrashPoint(kind=what)
    if how == "before-index" and what:
        return CrashPoint(kind=what, early=True)
    if how == "append" and what.isdigit() and int(what) > 0:
        return CrashPoint(n=int(what))
    if how == "at" and what:
        return CrashPoint(name=what)
    if how in ("body", "body-lost") and what.isdigit() and int(what) > 0:
        return CrashPoint(n=int(what), body=True, lost=how == "body-lost")
    if how in ("body-sync", "body-sync-lost") and what.isdigit() and int(what) > 0:
        return CrashPoint(n=int(what), body=True, lost=how == "body-sync-lost", sync=True)
    raise MachineError(
        "HZM050",
        f"HZ_CRASH_AT={value!r} is not a crash point",
        "use after:<event kind>, before-index:<event kind>, append:<n>, body:<n>, "
        "body-lost:<n>, body-sync:<n> or body-sync-lost:<n> (n from 1), at:<point>, "
        "or unset it",
    )


def crash_at(
    name: str,
    environ: Mapping[str, str] | None = None,
    *,
    exit_: Callable[[int], None] = os._exit,
) -> None:
    """Exit 137 here when ``HZ_CRASH_AT`` is ``at:<name>`` (a no-op otherwise)."""
    value = (os.environ if environ is None else environ).get("HZ_CRASH_AT", "")
    if value and parse(value).name == name:
        exit_(CRASH_EXIT)


def crash_hook(
    environ: Mapping[str, str] | None = None,
    *,
    early: bool = False,
    exit_: Callable[[int], None] = os._exit,
) -> Callable[[Event], None]:
    """The ``on_durable`` callback for the current ``HZ_CRASH_AT`` (a no-op when unset);
    ``early`` is the hook that runs before the index's (``before-index:<kind>``)."""
    value = (os.environ if environ is None else environ).get("HZ_CRASH_AT", "")
    if not value:
        return _nothing
    point = parse(value)
    if point.early != early or point.name is not None or point.body:
        return _nothing
    count = 0

    def hook(event: Event) -> None:
        nonlocal count
        count += 1
        kinds = {one.kind for one in expand_carried((event,))}  # and what it carries
        if point.n == count or point.kind in kinds:
            exit_(CRASH_EXIT)

    return hook


def body_crash_hook(
    environ: Mapping[str, str] | None = None,
    *,
    exit_: Callable[[int], None] = os._exit,
    power_cut: Callable[[], None] | None = None,
) -> Callable[[int, int], None] | None:
    """The ``on_write`` of a turn's `ledger.bodies.Bodies` for ``body:<n>`` and
    ``body-lost:<n>`` (None for any other ``HZ_CRASH_AT``, or none); ``power_cut``
    cuts the spine back to its last fsync too (`ledger.Spine.simulate_power_cut`)."""
    value = (os.environ if environ is None else environ).get("HZ_CRASH_AT", "")
    point = parse(value) if value else None
    if point is None or not point.body or point.sync:
        return None
    count = 0

    def hook(fd: int, synced: int) -> None:
        nonlocal count
        count += 1
        if point.n == count:
            if point.lost:
                os.ftruncate(fd, synced)
                if power_cut is not None:
                    power_cut()
            exit_(CRASH_EXIT)

    return hook


def body_sync_crash_hook(
    environ: Mapping[str, str] | None = None,
    *,
    exit_: Callable[[int], None] = os._exit,
    power_cut: Callable[[], None] | None = None,
) -> Callable[[tuple[Path, ...]], None] | None:
    """The ``on_sync`` of a turn's `ledger.bodies.Bodies` for ``body-sync:<n>`` and
    ``body-sync-lost:<n>`` (None for any other ``HZ_CRASH_AT``, or none)."""
    value = (os.environ if environ is None else environ).get("HZ_CRASH_AT", "")
    point = parse(value) if value else None
    if point is None or not point.sync:
        return None
    count = 0

    def hook(created: tuple[Path, ...]) -> None:
        nonlocal count
        count += 1
        if point.n == count:
            if point.lost:
                for path in created:  # names the directory's fsync had not yet made durable
                    path.unlink(missing_ok=True)
                if power_cut is not None:
                    power_cut()
            exit_(CRASH_EXIT)

    return hook


def _nothing(_event: Event) -> None:
    """No crash point is set."""
