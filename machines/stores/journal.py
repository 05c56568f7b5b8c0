"""What the machine writes to and reads from: the `Journal` and the `Body` protocols.

The journal is the durable record of a turn (the ledger's spine in production,
`InMemoryJournal` in tests and embeddings); the body holds the content the spine
never does (step results, model replies, tool results), addressed by the hash the
spine records. The machine never opens a file: the host hands it both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol

from ledger.event import Clock, Event, canonical, format_ts, make_event, sha256_hex
from machines.vocabulary import STEPS

OnDurable = Callable[[Event], None]


def content_hash(value: Any) -> str:
    """``sha256:`` and the hex SHA-256 of the canonical JSON of ``value``."""
    return "sha256:" + sha256_hex(canonical(value).encode("utf-8"))


def content_ref(value: Any) -> str:
    """The first 12 hex digits of `content_hash`: how the spine names a step's input.

    A body is looked up by exact name within one turn, and a turn holds a handful of
    values, so 48 bits keep two of them apart (a clash needs about 2**24 values in
    one turn); spines written before name inputs by the whole ``sha256:`` hash, and
    their bodies hold them under that name, so both are found as written.
    """
    return content_hash(value).removeprefix("sha256:")[:12]


def wake_keys(data: Mapping[str, Any], key: str | None) -> list[str]:
    """The wake keys of a ``turn.started``/``turn.skipped``: ``data.keys`` when the turn
    has several, else the envelope key (newer spines write ``keys`` only for several)."""
    extra = data.get("keys")
    if isinstance(extra, list) and extra:
        return [str(k) for k in extra]
    return [key] if key else []


def wake_causes(data: Mapping[str, Any], key: str | None) -> list[dict[str, Any]]:
    """The ``{cause, key}`` of each wake of a ``turn.started``/``turn.skipped`` (see
    `wake_keys`: one wake is ``data.cause`` and the envelope key)."""
    causes = data.get("causes")
    if isinstance(causes, list) and causes:
        return [dict(c) for c in causes if isinstance(c, Mapping)]
    cause = data.get("cause")
    return [{"cause": cause, "key": key}] if cause is not None and key else []


CARRIED = "steps"
"""The field in which a line carries the ``step.started`` checkpoints of its turn that
came just before it, ``{step: input}`` (docs/spine.md, "Steps carried by the next line")."""


def carried_steps(event: Event) -> list[Event]:
    """The ``step.started`` events ``event`` carries in its `CARRIED` field, in step order,
    each with the carrier's seq, time and place; none for a line that carries none."""
    steps = event.data.get(CARRIED) if event.kind != "step.started" else None
    if steps is None or not isinstance(steps, Mapping) or not steps:
        return []
    order = sorted(steps, key=lambda s: STEPS.index(s) if s in STEPS else len(STEPS))
    return [
        replace(event, kind="step.started", key=None, data={"step": s, "input": steps[s]})
        for s in order
    ]


def without_steps(event: Event) -> Event:
    """``event`` as if it carried no steps: the line's own kind and data."""
    if event.kind == "step.started" or CARRIED not in event.data:
        return event
    return replace(event, data={k: v for k, v in event.data.items() if k != CARRIED})


DONE = "done"
"""The field in which a line carries the end of an effect of its turn that came just
before it: ``{key: {"hash": ..., <own kind>: {...}}}``, the ``effect.done`` line's data
and, under its kind, the effect's own event when that is lazy too (``draft.placed``),
without the ``hash`` the two share (docs/spine.md, "An effect's end carried by the next
line")."""

CARRIED_OWN = frozenset({"draft.placed"})
"""Own events of an effect that ride with its ``effect.done`` (lazy lines no reader waits
for); every other own event is a line of its own, as before."""


def carried_effects(event: Event) -> list[Event]:
    """The ``effect.done`` events ``event`` carries in its `DONE` field, each followed by
    the effect's own event it carries, with the carrier's seq, time and place and the
    effect's key; none for a line that carries none."""
    done = event.data.get(DONE) if event.kind not in ("effect.done", *CARRIED_OWN) else None
    if done is None or not isinstance(done, Mapping) or not done:
        return []
    events: list[Event] = []
    for key, end in done.items():
        if not isinstance(end, Mapping):
            continue
        own = {kind: data for kind, data in end.items() if kind in CARRIED_OWN}
        data = {name: value for name, value in end.items() if name not in own}
        events.append(replace(event, kind="effect.done", key=str(key), data=data))
        for kind, given in own.items():
            payload = dict(given) if isinstance(given, Mapping) else {}
            if "hash" in end:
                payload.setdefault("hash", end["hash"])
            events.append(replace(event, kind=kind, key=str(key), data=payload))
    return events


def without_carried(event: Event) -> Event:
    """``event`` as if it carried nothing: the line's own kind and data."""
    if CARRIED not in event.data and not carried_effects(event):
        return event
    plain = without_steps(event)
    if DONE in plain.data and carried_effects(plain):
        plain = replace(plain, data={k: v for k, v in plain.data.items() if k != DONE})
    return plain


def expand_carried(events: Iterable[Event]) -> Iterator[Event]:
    """``events`` with every carried line written out before its carrier: first the
    effects' ends it carries (``effect.done``, then the effect's own event), then its
    steps (``step.started``, in step order), then the carrier as it would read alone.
    That is the stream a spine of one line per event gives (older spines pass as they
    are), so a reader of those kinds reads every form alike."""
    for event in events:
        if CARRIED not in event.data and DONE not in event.data:  # most lines carry nothing
            yield event
            continue
        effects = carried_effects(event)
        steps = carried_steps(event)
        if effects or steps:
            yield from effects
            yield from steps
            yield without_carried(event)
        else:
            yield event


expand_steps = expand_carried
"""The name `expand_carried` had when only steps were carried."""


def lines_of(event: Event) -> Iterable[Event]:
    """One event as the lines it stands for (`expand_carried` of it alone), itself when
    it carries nothing: a fold of every line asks this, without a generator per line."""
    if CARRIED in event.data or DONE in event.data:
        return expand_carried((event,))
    return (event,)


def keys_of(event: Event) -> list[str]:
    """Every idempotency key an event speaks for: its envelope key, ``data.keys`` and the
    keys of the effects whose end it carries (`carried_effects`)."""
    keys = [event.key] if event.key else []
    extra = event.data.get("keys")
    if isinstance(extra, list):
        keys.extend(k for k in extra if isinstance(k, str) and k not in keys)
    if DONE in event.data:
        keys.extend(e.key for e in carried_effects(event) if e.key and e.key not in keys)
    return keys


class Journal(Protocol):
    """The durable record the machine appends its checkpoints to."""

    def append(
        self,
        kind: str,
        data: Mapping[str, Any] | None = None,
        *,
        turn: str | None = None,
        key: str | None = None,
        short_text: Sequence[str] = (),
    ) -> Event:
        """Append one event durably and return it; raise and append nothing on failure."""
        ...

    def turn_events(self, turn: str) -> list[Event]:
        """The events of one turn, in order, read from where the turn started."""
        ...

    def key_events(self, key: str) -> list[Event]:
        """Every event that speaks for ``key`` (see `keys_of`), in order."""
        ...

    def recorded_done(self, key: str) -> str | None:
        """The hash of an ``effect.done`` the durable record holds for ``key`` in any
        turn, read from the record itself (not from an index that may lag), or None."""
        ...


class Body(Protocol):
    """The turn body: content addressed by the hash the spine records.

    The rule: `put` survives the process when it returns (written, if not yet
    fsynced). The machine appends the hash only after `put` returned, so a killed
    process never leaves a recorded hash without its content; a power cut may,
    and the machine then regains the value by rerunning the step that produced
    it (`TurnRun`, ``turn.resumed{regained}``). `machines.DiskBody` keeps it on
    disk; `InMemoryBody` only for tests.
    """

    def put(self, turn: str, digest: str, value: Any) -> None:
        """Keep ``value`` under ``digest`` for ``turn``, past the process on return
        (idempotent)."""
        ...

    def get(self, turn: str, digest: str) -> Any:
        """The value kept under ``digest``; `KeyError` when it is gone (expired, or
        lost to a power cut before its fsync)."""
        ...


class InMemoryJournal:
    """A `Journal` held in a list: for unit tests and hosts that need no file.

    It chains its events like the spine (``prev`` is the previous line's hash) and
    calls ``on_durable`` after each append, as the spine does, so crash points and
    host hooks behave the same.
    """

    def __init__(self, clock: Clock, *, on_durable: Iterable[OnDurable] = ()) -> None:
        self._clock = clock
        self._on_durable = list(on_durable)
        self._events: list[Event] = []
        self._by_turn: dict[str, list[Event]] = {}
        self._by_key: dict[str, list[Event]] = {}

    @property
    def events(self) -> Sequence[Event]:
        """Every event appended so far."""
        return tuple(self._events)

    def append(
        self,
        kind: str,
        data: Mapping[str, Any] | None = None,
        *,
        turn: str | None = None,
        key: str | None = None,
        short_text: Sequence[str] = (),
    ) -> Event:
        """Append one event (``short_text`` is accepted for protocol parity)."""
        last = self._events[-1] if self._events else None
        event = make_event(
            seq=last.seq + 1 if last else 1,
            ts=format_ts(self._clock()),
            prev=last.hash if last else None,
            kind=kind,
            data=dict(data or {}),
            turn=turn,
            key=key,
        )
        self._events.append(event)
        if turn is not None:
            self._by_turn.setdefault(turn, []).append(event)
        for one in keys_of(event):
            self._by_key.setdefault(one, []).append(event)
        for callback in self._on_durable:
            callback(event)
        return event

    def turn_events(self, turn: str) -> list[Event]:
        """The events of one turn, in order."""
        return list(self._by_turn.get(turn, ()))

    def key_events(self, key: str) -> list[Event]:
        """Every event that speaks for ``key``, in order."""
        return list(self._by_key.get(key, ()))

    def recorded_done(self, key: str) -> str | None:
        """The hash of the last ``effect.done`` for ``key``, or None."""
        done = [e for e in self._events if e.kind == "effect.done" and e.key == key]
        return str(done[-1].data.get("hash")) if done else None


class InMemoryBody:
    """A `Body` held in a dict, for tests and embeddings."""

    def __init__(self) -> None:
        self._values: dict[tuple[str, str], Any] = {}

    def put(self, turn: str, digest: str, value: Any) -> None:
        """Keep ``value`` under ``(turn, digest)``."""
        self._values[(turn, digest)] = value

    def get(self, turn: str, digest: str) -> Any:
        """The value kept under ``(turn, digest)``."""
        return self._values[(turn, digest)]

    def forget(self, turn: str) -> None:
        """Drop a turn's content, as expiry does."""
        for pair in [p for p in self._values if p[0] == turn]:
            del self._values[pair]
