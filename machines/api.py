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

A decorated tool or effect called outside a step of a running turn is HZM070.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import types
import typing
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, ParamSpec, TypeVar, cast

from ledger.event import Clock
from machines.context import TurnContext, current
from machines.effects import Effect, LocalProbe, Presence, WorldProbe
from machines.errors import MachineError
from machines.fold import APPLY, TurnState, fold
from machines.host_vocabulary import Vocabulary
from machines.journal import Body, InMemoryBody, InMemoryJournal, Journal
from machines.keys import Wake
from machines.resume import Pins, new_turn_id
from machines.runner import Settings
from machines.session import Session
from machines.steps import Acted, Fail, Skip, Wait
from machines.tools import INTERRUPTED, ToolDecl
from machines.values import ValueRefused, plain_json

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
    """``value`` with Pydantic models (at any depth of dicts and lists) dumped as JSON."""
    if hasattr(value, "model_dump") and hasattr(type(value), "model_fields"):
        return value.model_dump(mode="json")
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


def _as_json(adapter: Any, value: Any, what: str) -> Any:
    """``value`` checked against ``adapter`` (if any) and dumped as plain JSON."""
    if adapter is not None:
        value = adapter.dump_python(_validated(adapter, value, what), mode="json")
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
    *, probe: Probe, event: str | None = None, name: str | None = None, attempts: int = 3
) -> Callable[[Callable[P, Awaitable[Any]]], Callable[P, Awaitable[str]]]:
    """Make an async ``f(key, ...)`` an effect of the ledger, once per key (see the
    module); the call returns the hash of its result. ``event``: the effect's own
    event kind (``<name>.performed`` by default)."""

    def decorate(fn: Callable[P, Awaitable[Any]]) -> Callable[P, Awaitable[str]]:
        effect_name = _named(fn, name)
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
            work = Effect(effect_name, key, perform, _probe(probe, owner), kind, attempts=attempts)
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
    `Pins`, `asyncio.sleep`. ``run(key)`` applies the key rule to one job. On disk it
    holds the spine's lock from its first run (or `open`) to `close`: use it as a
    context manager."""

    def __init__(
        self,
        steps: Any,
        directory: Path | None = None,
        *,
        clock: Clock,
        vocabulary: Vocabulary = JOBS,
        on_durable: Sequence[Callable[[Any], None]] = (),
        **settings: Any,
    ) -> None:
        self.steps = steps
        self.directory = directory
        self.clock = clock
        self.vocabulary = vocabulary
        self.on_durable = list(on_durable)
        sleep = settings.pop("sleep", asyncio.sleep)
        self.settings = Settings(clock=clock, sleep=sleep, vocabulary=vocabulary, **settings)
        self._spine: Any = None
        self.journal: Journal = InMemoryJournal(clock, on_durable=self.on_durable)
        self.body: Body = InMemoryBody()
        self.session = Session(self.journal, self.body, steps, self.settings)

    def __enter__(self) -> Host:
        self.open()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def open(self) -> None:
        """Open the spine in ``directory`` (taking its lock) and its bodies; `run` does
        it on first use. Nothing to do in memory, or when open already."""
        if self.directory is None or self._spine is not None:
            return
        from ledger.spine import Spine
        from machines.crash import crash_hook
        from machines.disk_body import DiskBody
        from machines.spine_journal import SpineJournal

        hooks = [crash_hook(), *self.on_durable]
        self._spine = Spine.open(self.directory, clock=self.clock, on_durable=hooks)
        self.journal = SpineJournal.open(self._spine)
        self.body = DiskBody(self.directory, spine=self._spine)  # one fsync per step
        self.session = Session(self.journal, self.body, self.steps, self.settings)

    def close(self) -> None:
        """Close the bodies and the spine (its lock is released)."""
        if self._spine is not None:
            cast(Any, self.body).close()
            self._spine.close()
            self._spine = None

    async def run(self, key: str, cause: str | None = None) -> TurnState | None:
        """Run the job ``key`` (``cause``: the vocabulary's first by default) by the key
        rule: start it, resume its open turn, or leave a finished one; the state of its
        latest turn (None when it has none)."""
        self.open()
        wake = Wake(cause or self.vocabulary.causes[0], key, self.vocabulary)
        ran = await self.session.wake([wake], turn=new_turn_id(self.clock), pins=Pins())
        if ran:
            return ran[-1]
        turns = [e.turn for e in self.journal.key_events(key) if e.turn is not None]
        if not turns:
            return None
        return fold(turns[-1], self.journal.turn_events(turns[-1]), self.vocabulary)
