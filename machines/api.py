"""The short way to embed: decorated tools and effects, typed steps, and a `Host` with defaults.

It is a layer over the explicit API (`TurnContext.tool`, `TurnContext.effect`, `Steps`,
`Session`), which keeps working as it did:

- ``@tool(replay_safe=...)`` makes an async function a journalled tool call: its
  `ToolDecl`, its call id (``<step>:<tool>:<n>``, its position among the step's calls
  of that tool) and the closure over its arguments. Its arguments and result are
  checked to be JSON first (HZM071; Pydantic models are dumped); a result annotated
  with a type comes back as that type (HZM072 when it does not fit). A call that is
  not replay-safe and was cut by a crash returns `INTERRUPTED` instead of running again.
- ``@effect(probe=...)`` makes an async function ``f(key, ...)`` an effect of the ledger:
  performed at most once per ``key``, probed by key after a crash. ``probe`` is an
  async ``(key) -> "present" | "absent" | "unknown"``, a sync ``(key) -> bool`` (a
  local record), a `WorldProbe`/`LocalProbe`, or None (the world deduplicates by key).
  On a method, the probe may be a method too: it is called on the same object.
- `TypedSteps`: steps whose input and output annotations (Pydantic models, or any type
  Pydantic validates) are checked before anything is journalled (HZM072), and whose
  values must be JSON (HZM071); think and outcome pass their input on unless defined.
- `Host`: the steps over a spine in a directory (or in memory), `JOBS` words and empty
  `Pins` by default, one `run(key)` per job: the key rule starts, resumes or leaves it.
  A runner's object: any number of concurrent callers (tasks, and threads through
  `run_sync`) each get their own job's state; distinct keys run at once up to
  ``concurrency``, the same key once (single flight: a second caller gets the first's
  result); ``shared=True`` lets several processes on one directory share its jobs.

A decorated tool or effect called outside a step of a running turn is HZM070.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import inspect
import math
import threading
import types
import typing
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, ParamSpec, TypeVar, cast

from ledger.event import Clock, Event
from machines.core.context import TurnContext, current
from machines.core.effects import Effect, LocalProbe, Presence, WorldProbe
from machines.core.fold import APPLY, TurnState, fold
from machines.core.resume import Pins, new_turn_id, prepare_resume, prepare_turn
from machines.core.runner import Settings
from machines.core.session import Session
from machines.core.steps import Acted, Fail, Skip, Wait
from machines.core.tools import INTERRUPTED, ToolDecl
from machines.core.values import ValueRefused, plain_json
from machines.errors import MachineError
from machines.host_vocabulary import Vocabulary
from machines.keys import Wake, coalesce
from machines.stores.journal import (
    Body,
    InMemoryBody,
    InMemoryJournal,
    Journal,
    wake_causes,
    wake_keys,
)

__all__ = ["JOBS", "Host", "TypedSteps", "effect", "tool"]

P = ParamSpec("P")
R = TypeVar("R")

JOBS = Vocabulary("jobs", 1, dispositions=("done",), causes=("job",))
"""The words of a host that names none: a ``job`` wakes a turn, act ends it ``done``."""

_ENDINGS = (Wait, Skip, Fail, Acted)


def _context(name: str) -> TurnContext:
    ctx = current.get()
    if ctx is None:
        raise MachineError(
            "HZM070",
            f"{name} was called outside a step of a running turn",
            "call it from gather, think, outcome or act of steps the machine runs; "
            "to test the function alone, call its .fn",
        )
    return ctx


def _dumped(value: Any) -> Any:
    """``value`` with Pydantic models (at any depth of dicts and lists) dumped as JSON;
    HZM071 for a model whose JSON would come back otherwise (`_faithful`)."""
    if hasattr(value, "model_dump") and hasattr(type(value), "model_fields"):
        dumped = value.model_dump(mode="json")
        _faithful(type(value).model_validate, dumped, value, f"a {type(value).__name__}")
        return dumped
    if isinstance(value, dict):
        return {k: _dumped(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_dumped(v) for v in value]
    return value


def _annotation(fn: Callable[..., Any], name: str) -> Any:
    """The resolved annotation of ``name`` (a parameter, or ``return``), or None."""
    try:
        hints = typing.get_type_hints(fn)
    except (NameError, TypeError):  # a name only the defining function's locals know
        hints = {}
    return hints.get(name)


def _adapter(annotation: Any) -> Any:
    """A Pydantic `TypeAdapter` for ``annotation`` without the machine's own results
    (`Wait`, `Skip`, `Fail`, `Acted`), or None when nothing is left to check."""
    if annotation is None or annotation is Any:
        return None
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        left = [a for a in typing.get_args(annotation) if a not in _ENDINGS and a is not Any]
        if not left:
            return None
        annotation = left[0] if len(left) == 1 else typing.Union[tuple(left)]  # noqa: UP007
    elif annotation in _ENDINGS:
        return None
    from pydantic import TypeAdapter  # loads with the first typed value

    return TypeAdapter(annotation)


def _validated(adapter: Any, value: Any, what: str) -> Any:
    from pydantic import ValidationError

    try:
        return adapter.validate_python(value)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "it"
        raise ValueRefused(
            "HZM072",
            f"{what} fails its type: {where}: {first.get('msg')}",
            "return a value of the annotated type (or change the annotation)",
        ) from None


def _lossy(value: Any) -> str | None:
    """What in ``value`` JSON cannot carry as it is (a NaN or infinity, a set, a key that is
    not a string), at any depth of dicts, lists and models, or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"the number {value}"
    if isinstance(value, (set, frozenset)):
        return "a set"
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"the key {key!r}"
            found = _lossy(item)
            if found:
                return found
        return None
    if isinstance(value, (list, tuple)):
        return next((found for item in value if (found := _lossy(item))), None)
    if hasattr(type(value), "model_fields"):
        fields = type(value).model_fields
        return next((f for name in fields if (f := _lossy(getattr(value, name, None)))), None)
    return None


def _faithful(validate: Callable[[Any], Any], dumped: Any, value: Any, what: str) -> None:
    """HZM071 when ``value`` holds what JSON cannot carry (`_lossy`) and ``dumped`` (its
    JSON dump) does not validate back to it: Pydantic's JSON dump turns NaN and infinity
    into null, a set into a list and a key that is not a string into one. A type that
    brings the value back (``set[int]``, ``dict[int, str]``) passes."""
    from pydantic import ValidationError

    lost = _lossy(value)
    if lost is None:
        return
    try:
        if validate(dumped) == value:
            return
    except ValidationError:
        pass
    raise ValueRefused(
        "HZM071",
        f"{what} is not plain JSON: it holds {lost}, which its JSON dump would change",
        "return strings, finite numbers, booleans, null, lists and objects with string "
        "keys, or annotate a type that brings the value back (set[int], dict[int, str])",
    )


def _as_json(adapter: Any, value: Any, what: str) -> Any:
    """``value`` checked against ``adapter`` (if any) and dumped as plain JSON; HZM071,
    never a silent coercion, for a value its JSON would not bring back (`_faithful`)."""
    if adapter is not None:
        checked = _validated(adapter, value, what)
        value = adapter.dump_python(checked, mode="json")
        _faithful(adapter.validate_python, value, checked, what)
        return plain_json(value, what)
    return plain_json(_dumped(value), what)


def tool(
    *, replay_safe: bool, name: str | None = None
) -> Callable[[Callable[P, Awaitable[R]]], Callable[P, Awaitable[R]]]:
    """Make an async function a tool the turn journals (see the module)."""

    def decorate(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
        decl = ToolDecl(_named(fn, name), replay_safe)
        signature = inspect.signature(fn)
        returns = _adapter(_annotation(fn, "return"))

        @functools.wraps(fn)
        async def call(*args: P.args, **kwargs: P.kwargs) -> R:
            ctx = _context(f"tool {decl.name}")
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            given = {k: v for k, v in bound.arguments.items() if k != "self"}
            record = plain_json(_dumped(given), f"the arguments of tool {decl.name}")

            async def run() -> Any:
                return _as_json(None, await fn(*args, **kwargs), f"the result of tool {decl.name}")

            result = await ctx.tool(decl, ctx.next_call_id(decl.name), record, run)
            if returns is None or result == INTERRUPTED:
                return cast(R, result)
            return cast(R, _validated(returns, result, f"the result of tool {decl.name}"))

        setattr(call, "decl", decl)  # noqa: B010
        setattr(call, "fn", fn)  # noqa: B010
        return call

    return decorate


Probe = Callable[..., Awaitable[Presence]] | Callable[..., bool] | WorldProbe | LocalProbe | None


def _probe(probe: Probe, owner: Any) -> WorldProbe | LocalProbe | None:
    """The ledger's probe for ``probe``, bound to ``owner`` for a method's probe."""
    if probe is None or isinstance(probe, (WorldProbe, LocalProbe)):
        return probe
    bound = functools.partial(probe, owner) if owner is not None else probe
    if inspect.iscoroutinefunction(probe):
        return WorldProbe(cast(Callable[[str], Awaitable[Presence]], bound))
    return LocalProbe(cast(Callable[[str], bool], bound))


def effect(
    *,
    probe: Probe,
    event: str | None = None,
    name: str | None = None,
    attempts: int = 3,
    probe_first: bool = False,
) -> Callable[[Callable[P, Awaitable[Any]]], Callable[P, Awaitable[str]]]:
    """Make an async ``f(key, ...)`` an effect of the ledger, once per key (see the
    module); the call returns the hash of its result. ``event``: the effect's own
    event kind (``<name>.performed`` by default). ``probe_first``: ask the probe
    before the first perform of a key too (`Effect.probe_first`; HZM076 without a
    probe), for a spine that may come back older."""

    def decorate(fn: Callable[P, Awaitable[Any]]) -> Callable[P, Awaitable[str]]:
        effect_name = _named(fn, name)
        if probe_first and probe is None:
            raise MachineError(
                "HZM076",
                f"the effect {effect_name} asks to probe first but has no probe",
                "give it a probe, or leave probe_first False",
            )
        kind = event or f"{effect_name}.performed"
        if kind in APPLY:
            raise MachineError(
                "HZM074",
                f"the effect {effect_name} would record its own event as {kind!r}, "
                "a kind of the machine's",
                "name the effect or its event otherwise (event='mail.sent')",
            )
        signature = inspect.signature(fn)
        if "key" not in signature.parameters:
            raise MachineError(
                "HZM074",
                f"the effect {effect_name} takes no key parameter",
                "give it a first parameter key: str (its idempotency key, which the "
                "probe looks up)",
            )
        method = next(iter(signature.parameters)) == "self"

        @functools.wraps(fn)
        async def call(*args: P.args, **kwargs: P.kwargs) -> str:
            ctx = _context(f"effect {effect_name}")
            bound = signature.bind(*args, **kwargs)
            owner = bound.arguments["self"] if method else None

            async def perform(key: str) -> Any:
                bound.arguments["key"] = key
                return _dumped(await fn(*bound.args, **bound.kwargs))

            key = str(bound.arguments["key"])
            found = _probe(probe, owner)
            work = Effect(
                effect_name, key, perform, found, kind, attempts=attempts, probe_first=probe_first
            )
            return await ctx.effect(work)

        setattr(call, "fn", fn)  # noqa: B010
        return call

    return decorate


def _named(fn: Callable[..., Any], name: str | None) -> str:
    return name or fn.__name__.lower()


_STEPS = ("gather", "think", "outcome", "act")


class TypedSteps:
    """`Steps` whose annotated inputs and outputs are checked before they are journalled.

    A subclass defines ``gather(self, ctx) -> T``, and any of ``think``, ``outcome``
    (both pass their input on when not defined) and ``act(self, ctx, value: T) ->
    Acted``. A value that fails its annotation is HZM072, one that is not JSON HZM071;
    either fails the turn, recorded, before the value is journalled and before any
    later step (so before act's effects). An `Acted` may carry a model as its data.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for step in _STEPS:
            fn = cls.__dict__.get(step)
            if fn is not None and not getattr(fn, "typed", False):
                setattr(cls, step, _typed(step, fn))

    async def think(self, ctx: TurnContext, gathered: Any) -> Any:
        """Hand gather's value on."""
        return gathered

    async def outcome(self, ctx: TurnContext, thought: Any) -> Any:
        """Hand think's value on."""
        return thought


def _typed(step: str, fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    names = list(inspect.signature(fn).parameters)
    given = _adapter(_annotation(fn, names[2])) if len(names) > 2 else None
    returns = _adapter(_annotation(fn, "return"))

    @functools.wraps(fn)
    async def run(self: Any, ctx: TurnContext, *value: Any) -> Any:
        if given is not None and value:
            value = (_validated(given, value[0], f"the input of {step}"),)
        result = await fn(self, ctx, *value)
        if isinstance(result, Acted):
            return Acted(result.disposition, _dumped(result.data))
        if isinstance(result, _ENDINGS):
            return result
        return _as_json(returns, result, f"the value of {step}")

    setattr(run, "typed", True)  # noqa: B010
    return run


class Host:
    """Durable turns for ``steps`` with defaults a host need not name: its spine and
    bodies in ``directory`` (None: in memory, for tests), the `JOBS` words, empty
    `Pins`, `asyncio.sleep`. ``run(key)`` applies the key rule to one job.

    A runner's object: ``await host.run(key)`` from any number of concurrent tasks runs
    each caller's own job and returns that job's state; distinct keys run at once, at
    most ``concurrency`` of them, and one key runs once (a second caller for a key that
    is running waits for it and gets its result). `run_sync` does the same from threads.
    The turns run on one event loop at a time: the caller's, or when callers come from
    several loops or threads, the host's own loop thread; waiting for a lock or a slot
    is awaited, never blocking the loop.

    On disk it holds the spine's lock from its first run (or `open`) to `close`: use it
    as a context manager. With ``shared=True`` it holds the lock only while a job runs,
    so several processes on one directory share its jobs: each job (and each key) runs
    in one process at a time, a second process waits for the lock up to
    ``lock_timeout`` seconds, then gets HZL010 naming the holder."""

    def __init__(
        self,
        steps: Any,
        directory: Path | None = None,
        *,
        clock: Clock,
        vocabulary: Vocabulary = JOBS,
        on_durable: Sequence[Callable[[Any], None]] = (),
        concurrency: int = 1,
        shared: bool = False,
        lock_timeout: float = 10.0,
        postgres: str | None = None,
        lease: float = 30.0,
        **settings: Any,
    ) -> None:
        if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
            raise MachineError(
                "HZM090",
                f"Host(concurrency={concurrency!r}): the bound on jobs running at once "
                "must be a whole number of at least 1",
                "give concurrency=1 (one job at a time) or more",
            )
        if postgres is not None and directory is not None:
            raise MachineError(
                "HZM102",
                "Host was given both a directory and postgres=: the turns live in one of them",
                "pass postgres='postgresql://...' for workers on many machines, or a "
                "directory for a spine on this machine",
            )
        self.steps = steps
        self.directory = directory
        self.postgres = postgres
        self.lease = lease
        self._pg: Any = None
        """The connection to the Postgres journal (opened by the first job)."""
        self._pg_enqueue: Any = None
        """`enqueue`'s own connection: callers in any thread, never inside a job's append."""
        self.clock = clock
        self.vocabulary = vocabulary
        self.on_durable = list(on_durable)
        self.concurrency = concurrency
        self.shared = shared and directory is not None
        self.lock_timeout = lock_timeout
        sleep = settings.pop("sleep", asyncio.sleep)
        self.settings = Settings(clock=clock, sleep=sleep, vocabulary=vocabulary, **settings)
        self._spine: Any = None
        self._index: Any = None
        """The index of the last journal (``shared``: kept while the lock is not held)."""
        self.journal: Journal = InMemoryJournal(clock, on_durable=self.on_durable)
        self.body: Body = InMemoryBody()
        self.session = Session(self.journal, self.body, steps, self.settings)
        self._guard = threading.Lock()
        """Guards which loop runs the turns (`_loop`), its jobs and who waits for it."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._jobs: dict[str, asyncio.Task[TurnState | None]] = {}
        self._waiting: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._slots: asyncio.Semaphore | None = None
        self._opening: asyncio.Lock | None = None
        self._holding = 0
        self._own: asyncio.AbstractEventLoop | None = None
        self._own_thread: threading.Thread | None = None

    def __enter__(self) -> Host:
        self.open()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def open(self) -> None:
        """Open the spine in ``directory`` (taking its lock, waiting up to
        ``lock_timeout``) and its bodies; `run` does it on first use. Nothing to do in
        memory, when open already, or when ``shared`` (each job takes the lock)."""
        with self._guard:
            if self.directory is None or self._spine is not None or self.shared:
                return
            self._opened(self._spine_open(self.lock_timeout))

    def _spine_open(self, lock_timeout: float) -> Any:
        from ledger.spine import Spine
        from machines.crashkit.crash import crash_hook

        hooks = [crash_hook(), *self.on_durable]
        assert self.directory is not None
        return Spine.open(
            self.directory, clock=self.clock, on_durable=hooks, lock_timeout=lock_timeout
        )

    def _opened(self, spine: Any) -> None:
        """Take ``spine`` (its lock held) as the host's: the journal (the index held
        from the last open caught up, else scanned), the bodies and the session."""
        from machines.stores.disk_body import DiskBody
        from machines.stores.spine_journal import SpineJournal

        assert self.directory is not None
        try:
            journal = SpineJournal.open(spine, index=self._index)
        except BaseException:
            spine.close()
            raise
        self._spine, self.journal, self._index = spine, journal, journal.index
        self.body = DiskBody(self.directory, spine=spine)  # one fsync per step
        self.session = Session(self.journal, self.body, self.steps, self.settings)

    async def _open_awaited(self) -> None:
        """`open`, with the wait for the spine's lock awaited (polled), not blocking."""
        from ledger.errors import LedgerError
        from ledger.lock import POLL_SECONDS, busy
        from ledger.spine import LOCK_NAME

        assert self.directory is not None
        polls = max(0, int(self.lock_timeout / POLL_SECONDS + 0.999999))
        for attempt in range(polls + 1):
            try:
                spine = self._spine_open(0)
            except LedgerError as error:
                if error.code != "HZL010":
                    raise
                if attempt < polls:
                    await asyncio.sleep(POLL_SECONDS)
                continue
            self._opened(spine)
            return
        raise busy(Path(self.directory) / LOCK_NAME, self.lock_timeout)

    def close(self) -> None:
        """Close the bodies and the spine (its lock is released), and stop the host's
        own loop thread if `run_sync` started one. Call it once no run is in flight."""
        with self._guard:
            own, thread = self._own, self._own_thread
            self._own = self._own_thread = None
        if own is not None and thread is not None:
            own.call_soon_threadsafe(own.stop)
            thread.join()
            own.close()
        self._release_spine()
        for conn in (self._pg, self._pg_enqueue):
            if conn is not None:
                conn.close()
        self._pg = self._pg_enqueue = None

    def _pg_open(self) -> Any:
        """The connection to the Postgres journal, the journal, bodies and session over
        it (made once, by the first job)."""
        if self._pg is None:
            from machines.crashkit.crash import crash_hook
            from machines.stores.pg_journal import PostgresBody, PostgresJournal, connect

            assert self.postgres is not None
            conn = connect(self.postgres)
            hooks = [crash_hook(), *self.on_durable]
            self.journal = PostgresJournal(conn, self.clock, on_durable=hooks)
            self.body = PostgresBody(conn)
            self.session = Session(self.journal, self.body, self.steps, self.settings)
            self._pg = conn
        return self._pg

    async def _pg_job(self, key: str, cause: str | None) -> TurnState | None:
        """One job on Postgres: the key's advisory lock held (awaited; HZM103 after
        ``lock_timeout``), the key rule run, the job marked done in the queue."""
        from ledger.lock import POLL_SECONDS
        from machines.stores.pg_journal import (
            connection_lost,
            finish,
            key_holder,
            key_unlock,
            lost,
            try_key_lock,
        )

        with self._guard:
            conn = self._pg_open()
        try:
            waited = 0.0
            while not try_key_lock(conn, key):
                if waited >= self.lock_timeout:
                    raise MachineError(
                        "HZM103",
                        f"the job {key} is held by another worker ({key_holder(conn, key)}) "
                        f"after {self.lock_timeout:g} s",
                        "it runs there; call run again later, or raise Host(lock_timeout=)",
                    )
                await asyncio.sleep(POLL_SECONDS)
                waited += POLL_SECONDS
            try:
                state = await self._turns(key, cause)
                finish(conn, key)
                return state
            finally:
                if not lost(conn):
                    key_unlock(conn, key)
        except Exception as error:
            if not lost(conn):
                raise
            self._pg_drop(conn)  # the next job connects again
            raise connection_lost(key, error) from error

    def _pg_drop(self, conn: Any) -> None:
        """Forget the lost connection ``conn`` (a server restart, a network cut): the
        next job opens a new one, with a new journal, bodies and session over it."""
        with self._guard:
            if self._pg is conn:
                self._pg = None
        with contextlib.suppress(Exception):
            conn.close()

    async def _pg_reconnect(self, old: Any, key: str | None, error: Exception) -> Any:
        """A new connection after ``old`` was lost, the server polled for up to
        ``lock_timeout`` seconds (HZM106 after); ``key``, the job this worker ran then, is
        made due again at once (its turn stopped where its record ends)."""
        from ledger.lock import POLL_SECONDS
        from machines.stores.pg_journal import release, unreachable, worker_name

        self._pg_drop(old)
        waited = 0.0
        while True:
            try:
                with self._guard:
                    conn = self._pg_open()
                break
            except MachineError as refused:
                if refused.code != "HZM100" or waited >= self.lock_timeout:
                    raise unreachable(error, refused, self.lock_timeout) from refused
            await asyncio.sleep(POLL_SECONDS)
            waited += POLL_SECONDS
        if key is not None:
            release(conn, key, worker_name())
        return conn

    def enqueue(self, key: str, cause: str | None = None) -> None:
        """Put the job ``key`` in the Postgres queue, due now, for any worker's `work`
        (HZM104 without ``postgres``); from any thread (its own connection, made again
        once when it was lost: queuing twice is queuing once)."""
        from machines.stores.pg_journal import connect, enqueue, lost

        self._queue("enqueue")
        assert self.postgres is not None
        with self._guard:
            for again in (False, True):
                if self._pg_enqueue is None or lost(self._pg_enqueue):
                    self._pg_enqueue = connect(self.postgres)  # HZM100 when the server is down
                try:
                    enqueue(self._pg_enqueue, key, cause)
                    return
                except Exception:
                    if again or not lost(self._pg_enqueue):
                        raise

    def _queue(self, what: str) -> Any:
        """The connection of the journal (HZM104 without ``postgres``)."""
        if self.postgres is None:
            raise MachineError(
                "HZM104",
                f"Host.{what} needs the Postgres queue, and this host has no postgres=",
                "build the host with Host(steps, postgres='postgresql://...'), or call "
                "run(key) for each job",
            )
        with self._guard:
            return self._pg_open()

    async def work(self, *, until_empty: bool = True) -> int:
        """Claim due jobs from the queue and run them, one at a time, until no job is
        left undone (``until_empty``) or none is due now; how many this worker ran.
        While a job runs its lease (``lease`` seconds of the host's ``clock``) is renewed
        every third of it, so a job longer than its lease stays with this worker; a job
        whose worker died is claimed again once its lease lapses, and resumed from the
        record; one whose key another worker still holds is left to it (HZM104 without
        ``postgres``)."""
        from ledger.lock import POLL_SECONDS
        from machines.stores.pg_journal import (
            claim,
            key_unlock,
            lost,
            renewing,
            try_key_lock,
            unfinished,
            worker_name,
        )

        conn = self._queue("work")
        me, ran = worker_name(), 0
        while True:
            key: str | None = None
            try:
                got = claim(conn, me, self.lease, self.clock())
                if got is None:
                    if not until_empty or unfinished(conn) == 0:
                        return ran
                    await asyncio.sleep(POLL_SECONDS)  # a job running elsewhere, or leased
                    continue
                key, cause = got
                if not try_key_lock(conn, key):  # running elsewhere: it finishes there
                    continue
                try:  # the lock is taken again by the job (a session's locks stack)
                    async with renewing(conn, key, me, self.lease, self.clock):
                        await self.run(key, cause)
                finally:
                    if not lost(conn):
                        key_unlock(conn, key)
                ran += 1
            except Exception as error:
                if not lost(conn):
                    raise
                conn = await self._pg_reconnect(conn, key, error)  # HZM106 when it cannot

    def _release_spine(self) -> None:
        if self._spine is not None:
            cast(Any, self.body).close()
            self._spine.close()
            self._spine = None

    async def run(self, key: str, cause: str | None = None) -> TurnState | None:
        """Run the job ``key`` (``cause``: the vocabulary's first by default) by the key
        rule: start it, resume its open turn, or leave a finished one; the state of its
        latest turn (None when it has none). A finished job is answered from the
        journal's index without reading its turn: its state, disposition, reason,
        error, keys, causes and pins (fold ``journal.turn_events(turn)`` for the rest).

        Safe under concurrent callers: each gets its own job's state; a key already
        running is not run again, its caller gets that run's result."""
        while True:
            here = asyncio.get_running_loop()
            forward: asyncio.AbstractEventLoop | None = None
            waiter: asyncio.Future[None] | None = None
            with self._guard:
                if self._loop is None:
                    self._bind(here)
                if self._loop is here:
                    job = self._jobs.get(key)
                    if job is None:
                        job = here.create_task(self._job(key, cause))
                        self._jobs[key] = job
                        job.add_done_callback(functools.partial(self._finished, key))
                    break
                if self._loop is self._own:
                    forward = self._own
                else:  # another caller's loop runs turns: wait until it has none
                    waiter = here.create_future()
                    self._waiting.append((here, waiter))
            if forward is not None:
                handed = asyncio.run_coroutine_threadsafe(self.run(key, cause), forward)
                return await asyncio.wrap_future(handed)
            assert waiter is not None
            await waiter
        return await asyncio.shield(job)

    def run_sync(self, key: str, cause: str | None = None) -> TurnState | None:
        """`run` from a thread (any number of threads at once): the job runs on the
        host's own loop thread (or on the loop already running this host's turns), one
        journal for all. HZM091 inside a running event loop: await `run` there."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise MachineError(
                "HZM091",
                f"Host.run_sync({key!r}) was called inside a running event loop",
                "await host.run(key) there; run_sync is for threads without a loop",
            )
        future: concurrent.futures.Future[TurnState | None]
        future = asyncio.run_coroutine_threadsafe(self.run(key, cause), self._own_loop())
        return future.result()

    def _own_loop(self) -> asyncio.AbstractEventLoop:
        """The host's own event loop, running in a daemon thread (started once)."""
        with self._guard:
            if self._own is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=loop.run_forever, name="machines-host", daemon=True
                )
                thread.start()
                self._own, self._own_thread = loop, thread
            return self._own

    def _bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Run turns on ``loop`` from now until its jobs are done (under `_guard`)."""
        self._loop = loop
        self._slots = asyncio.Semaphore(self.concurrency)
        self._opening = asyncio.Lock()

    def _finished(self, key: str, job: asyncio.Task[TurnState | None]) -> None:
        """A job ended: the loop is free for another caller's once none is left."""
        with self._guard:
            if self._jobs.get(key) is job:
                del self._jobs[key]
            if self._jobs:
                return
            self._loop = None
            waiting, self._waiting = self._waiting, []
        for loop, waiter in waiting:
            if not loop.is_closed():
                loop.call_soon_threadsafe(_wake, waiter)

    async def _job(self, key: str, cause: str | None) -> TurnState | None:
        """One job, in one of the ``concurrency`` slots, the spine held meanwhile."""
        assert self._slots is not None and self._opening is not None
        async with self._slots:
            if self.postgres is not None:
                return await self._pg_job(key, cause)
            async with self._opening:
                if self.directory is not None and self._spine is None:
                    await self._open_awaited()
                if self._holding == 0 and self.directory is not None:
                    self.session._claim()  # another Session over this journal: HZM041
                self._holding += 1
            try:
                return await self._turns(key, cause)
            finally:
                self._holding -= 1
                if self._holding == 0 and self.directory is not None:
                    self.session._release()
                    if self.shared:
                        self._release_spine()

    async def _turns(self, key: str, cause: str | None) -> TurnState | None:
        """The key rule for one job: resume its open turn, start one, or leave it."""
        wake = Wake(cause or self.vocabulary.causes[0], key, self.vocabulary)
        plan = coalesce(self.journal, [wake])
        ran: TurnState | None = None
        for turn in plan.resume:
            run = prepare_resume(
                self.journal, self.body, self.steps, self.settings, turn=turn, woken_by="recovery"
            )
            if run is not None:
                ran = await run.drive()
                continue
            state = fold(turn, self.journal.turn_events(turn), self.vocabulary)
            ran = state if state.state == "abandoned" else ran
        if plan.start:
            turn = new_turn_id(self.clock)
            wakes = list(plan.start)
            run = prepare_turn(
                self.journal,
                self.body,
                self.steps,
                self.settings,
                turn=turn,
                wakes=wakes,
                pins=Pins(),
            )
            ran = await run.drive()
        return ran if ran is not None else self._latest(key)

    def _latest(self, key: str) -> TurnState | None:
        """The state of ``key``'s latest turn; an ended one from the index alone."""
        events = self.journal.key_events(key)
        turns = [e.turn for e in events if e.turn is not None]
        if not turns:
            return None
        turn = turns[-1]
        index = getattr(self.journal, "index", None)
        end = getattr(index, "turn_final", {}).get(turn)
        if end is not None:
            started = next((e for e in events if e.turn == turn and e.kind == "turn.started"), None)
            return _ended(turn, started, end, self.vocabulary)
        return fold(turn, self.journal.turn_events(turn), self.vocabulary)


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _ended(turn: str, started: Event | None, end: Event, vocabulary: Vocabulary) -> TurnState:
    """An ended turn's state from its ``turn.started`` and its end line only (no spine
    read): what the fold of all its lines says of its ending, keys, causes and pins."""
    state = TurnState(turn)
    if started is not None:
        started = vocabulary.migrate(started)
        state.cause = started.data.get("cause")
        state.causes = wake_causes(started.data, started.key)
        state.keys = wake_keys(started.data, started.key)
        state.pins = dict(started.data.get("pins", {}))
    end = vocabulary.migrate(end)
    if end.kind == "turn.skipped":
        state.state = state.disposition = "skipped"
        state.keys = state.keys or wake_keys(end.data, end.key)
        state.causes = state.causes or wake_causes(end.data, end.key)
    else:
        disposition = end.data.get("disposition")
        state.state = {"failed": "failed", "abandoned": "abandoned"}.get(
            str(disposition), "finished"
        )
        state.disposition = disposition
        state.error = end.data.get("error")
    state.reason = end.data.get("reason")
    state.last_seq = end.seq
    return state
