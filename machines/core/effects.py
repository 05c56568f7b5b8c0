"""The effect ledger: intent before the effect, outcome after, a probe by key on resume.

An effect in the world goes ``effect.started{key, effect}`` (durable) -> perform ->
``effect.done{key, hash}`` | ``effect.failed{key, error}`` -> the effect's own event
(``draft.placed``, ``question.asked``, ...) with the same key. On a resume, an effect
started without an outcome is probed by key: ``present`` records done without
performing, ``absent`` performs once, ``unknown`` performs nothing and leaves the
turn open (`ProbeUnknown`): the next resume probes again and, past ``max_resumes``,
the turn ends abandoned. hz never risks a second effect on a guess.

A turn that ends on its timeout or its resume limit never leaves an effect started
and not probed (`settle_effect`): before it is abandoned, each such effect is probed
and what the probe found is recorded: ``present`` as ``effect.done{probed}`` and the
effect's own event (so a draft written just before a kill is recorded), ``absent`` as
``effect.failed{error: not-performed}``; ``unknown`` records nothing (nobody knows).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import field
from typing import Any, Literal

from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential

from ledger.records import frozen_record
from machines.core.fold import EffectRecord
from machines.errors import MachineError
from machines.stores.journal import Journal, content_hash
from machines.telemetry import logs

Presence = Literal["present", "absent", "unknown"]
Sleep = Callable[[float], Awaitable[None]]


@frozen_record
class WorldProbe:
    """Ask the adapter whether the effect with this key is in the world (its tag lookup)."""

    check: Callable[[str], Awaitable[Presence]]


@frozen_record
class LocalProbe:
    """hz's own record answers: ``has(key)`` is True when the effect is recorded
    there (a question file in the outbox, or the journal itself: `recorded_in`)."""

    has: Callable[[str], bool]


def recorded_in(journal: Journal, kind: str) -> Callable[[str], bool]:
    """A local record that is the journal: an event of ``kind`` with the key, in
    any turn. Right for an effect whose own event *is* the effect (nothing is
    written elsewhere before it)."""

    def has(key: str) -> bool:
        return any(e.kind == kind for e in journal.key_events(key))

    return has


Probe = WorldProbe | LocalProbe


@frozen_record
class Effect:
    """One effect: its name, idempotency key, probe, the work, and its own event.

    ``perform(key)`` does the work and returns a JSON-able result, whose hash goes
    into ``effect.done`` and the own event. ``probe=None`` declares an effect with
    no way to look it up: a resume performs it again, and the crash matrix
    (`machines.crashkit.matrix`) reports the double; only use it for effects the world
    deduplicates by key.

    ``probe_first=True`` asks the probe before the *first* perform of a key too, not only
    after an interruption: the world is looked at before acting, so an effect done by a
    part of the spine that was lost since (a spine restored from an older copy, or cut at
    a line boundary) is recorded as done (``effect.done{probed}``), never done again. It
    costs one probe per new effect; it needs a probe (HZM076).
    """

    name: str
    key: str
    perform: Callable[[str], Awaitable[Any]]
    probe: Probe | None
    event: str
    event_data: Mapping[str, Any] = field(default_factory=dict)
    short_text: tuple[str, ...] = ()
    attempts: int = 3
    probe_first: bool = False

    def __post_init__(self) -> None:
        if self.probe_first and self.probe is None:
            raise MachineError(
                "HZM076",
                f"the effect {self.key} asks to probe first but has no probe",
                "give it a probe (WorldProbe or LocalProbe), or leave probe_first False",
            )


class ProbeUnknown(MachineError):
    """HZM020: the probe could not tell whether an interrupted effect happened."""

    def __init__(self, key: str) -> None:
        super().__init__(
            "HZM020",
            f"the effect {key} was interrupted and its probe answered unknown",
            "nothing was performed; the next resume probes again (hz heinzel resume), "
            "and past max_resumes the turn ends abandoned",
        )


class EffectFailed(MachineError):
    """HZM021: an effect failed (after its retries); ``effect.failed`` is recorded."""

    def __init__(self, key: str, error: str) -> None:
        super().__init__(
            "HZM021",
            f"the effect {key} failed: {error}",
            "see the turn's effect.failed line; retry the turn once the cause is fixed",
        )


class EffectRefused(MachineError):
    """HZM023: an effect whose data or result is not JSON (the turn fails)."""

    def __init__(self, key: str, what: str, error: object) -> None:
        super().__init__(
            "HZM023",
            f"the effect {key}: its {what} is not JSON ({error})",
            "give event_data and perform's result as strings, numbers, booleans, null, "
            "lists and objects only",
        )


def _json_or_refuse(effect: Effect) -> None:
    """Refuse, before anything is written or performed, event data that is not JSON."""
    try:
        content_hash(dict(effect.event_data))
    except (TypeError, ValueError) as error:
        raise EffectRefused(effect.key, "event_data", error) from None


def is_retryable(error: BaseException) -> bool:
    """True when the error says so (a ``retryable`` attribute that is true)."""
    return bool(getattr(error, "retryable", False))


async def _probe(effect: Effect) -> Presence:
    if isinstance(effect.probe, WorldProbe):
        return await effect.probe.check(effect.key)
    if isinstance(effect.probe, LocalProbe):
        return "present" if effect.probe.has(effect.key) else "absent"
    return "absent"


async def _perform(effect: Effect, sleep: Sleep) -> Any:
    retrying = AsyncRetrying(
        stop=stop_after_attempt(max(1, effect.attempts)),
        wait=wait_exponential(multiplier=0.5, max=30),
        retry=retry_if_exception(is_retryable),
        sleep=sleep,
        reraise=True,
    )
    async for attempt in retrying:
        with attempt:
            return await effect.perform(effect.key)
    raise AssertionError("unreachable: tenacity reraises")  # pragma: no cover


def _elsewhere(journal: Journal, key: str, turn: str) -> tuple[str | None, str | None]:
    """What other turns recorded for ``key``: ``done`` (and its hash), ``started``, or None."""
    others = [e for e in journal.key_events(key) if e.turn != turn]
    done = [e for e in others if e.kind == "effect.done"]
    if done:
        return "done", str(done[-1].data.get("hash"))
    if any(e.kind == "effect.started" for e in others):
        return "started", None
    return None, None


def _own_event(effect: Effect, journal: Journal, turn: str, digest: str) -> None:
    data = {**effect.event_data, "hash": digest}  # the key is the line's own envelope key
    journal.append(effect.event, data, turn=turn, key=effect.key, short_text=effect.short_text)


async def run_effect(
    effect: Effect,
    *,
    journal: Journal,
    turn: str,
    record: EffectRecord | None,
    sleep: Sleep,
) -> str:
    """Perform ``effect`` at most once per key; return its result hash.

    ``record`` is what the turn's fold knows of the key (``None`` for a new one).
    A key another turn already has done is not performed again (its hash is
    returned and nothing is written), nor one the durable record itself holds as
    done (`Journal.recorded_done`, whatever an index says); one another turn
    started without an outcome is probed before it is performed, and so is a new key
    of an effect that asks to be probed first (``probe_first``). Event data that
    is not JSON is refused before anything is written (HZM023); a result that is
    not JSON is recorded as done (the world changed once) and fails the turn HZM023.
    """
    if record is not None and record.outcome == "failed":
        raise EffectFailed(effect.key, str(record.error))
    if record is not None and record.outcome == "done":
        digest = str(record.hash)
        if not record.event_seen:
            _own_event(effect, journal, turn, digest)
        return digest
    uncertain = record is not None
    if record is None:
        _json_or_refuse(effect)
        status, done_hash = _elsewhere(journal, effect.key, turn)
        if status == "done":
            logs.info("effect.done_elsewhere", key=effect.key)
            return str(done_hash)
        recorded = journal.recorded_done(effect.key)
        if recorded is not None:
            logs.warning("effect.done_in_record", key=effect.key)
            return recorded
        journal.append("effect.started", {"effect": effect.name}, turn=turn, key=effect.key)
        uncertain = status == "started" or effect.probe_first
    if uncertain:
        presence = await _probe(effect)
        logs.info("effect.probed", key=effect.key, presence=presence)
        if presence == "unknown":
            raise ProbeUnknown(effect.key)
        if presence == "present":
            digest = content_hash({"key": effect.key, "probed": "present"})
            journal.append(
                "effect.done", {"hash": digest, "probed": True}, turn=turn, key=effect.key
            )
            _own_event(effect, journal, turn, digest)
            return digest
    try:
        result = await _perform(effect, sleep)
    except Exception as error:
        message = str(getattr(error, "code", "")) or type(error).__name__
        logs.warning("effect.failed", key=effect.key, error=str(error))
        journal.append("effect.failed", {"error": message}, turn=turn, key=effect.key)
        raise EffectFailed(effect.key, message) from error
    try:
        digest = content_hash(result)
    except (TypeError, ValueError) as error:
        digest = content_hash({"key": effect.key, "result": "not-json"})
        journal.append("effect.done", {"hash": digest, "not_json": True}, turn=turn, key=effect.key)
        _own_event(effect, journal, turn, digest)
        raise EffectRefused(effect.key, "result", error) from None
    journal.append("effect.done", {"hash": digest}, turn=turn, key=effect.key)
    _own_event(effect, journal, turn, digest)
    return digest


class Settled(Exception):
    """Raised in a settling act step at the first effect it never started: nothing
    after it ran before the turn ended, and nothing is performed now."""


async def settle_effect(
    effect: Effect, *, journal: Journal, turn: str, record: EffectRecord | None
) -> str:
    """Probe an effect of a turn that is about to be abandoned, and record what is
    found; never perform it. Raises `Settled` for an effect the turn never started."""
    if record is None:
        raise Settled(effect.key)
    if record.outcome == "failed":
        return ""
    if record.outcome == "done":
        if not record.event_seen:
            _own_event(effect, journal, turn, str(record.hash))
        return str(record.hash)
    presence = await _probe(effect) if effect.probe is not None else "unknown"
    logs.info("effect.settled", key=effect.key, presence=presence)
    if presence == "present":
        digest = content_hash({"key": effect.key, "probed": "present"})
        journal.append("effect.done", {"hash": digest, "probed": True}, turn=turn, key=effect.key)
        _own_event(effect, journal, turn, digest)
        return digest
    if presence == "absent":
        journal.append("effect.failed", {"error": "not-performed"}, turn=turn, key=effect.key)
    return ""
