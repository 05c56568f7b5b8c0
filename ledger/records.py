"""``frozen_record`` and ``mutable_record``: hz's slotted record types, cheap to define.

``@frozen_record`` is ``@dataclass(frozen=True, slots=True)`` with the same fields, ``field()``
options, ``__init__`` signature, ``__post_init__``, equality, hash, repr, pickling and
``dataclasses.fields``/``replace``/``asdict``. What differs is the cost of the class
statement: on Python 3.11 a frozen dataclass compiles six generated methods from text
(``__init__``, ``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__``, ``__delattr__``),
about 0.6 M instructions each; ``frozen_record`` compiles only its ``__init__``, on the class's
first instance (a class a process never instantiates costs no compile), and shares one
``__eq__``, ``__hash__``, ``__repr__`` and frozen ``__setattr__``/``__delattr__`` among
every record, each reading the class's own fields by a getter made once (``attrgetter``).
A record's ``__init__`` is the dataclass's own code (one assignment per field), so making
one is as cheap as before; comparing or hashing one is a C getter and a tuple compare.
docs/daemon.md ("Where a drafted wake's share goes") has the figures.

``mutable_record`` is ``@dataclass(slots=True)`` made the same way (equality and repr
shared; unhashable, as a dataclass with ``eq`` and without ``frozen`` is).
"""

from __future__ import annotations

import dataclasses
import reprlib
from collections.abc import Callable
from dataclasses import MISSING, Field, FrozenInstanceError
from operator import attrgetter
from typing import Any, TypeVar, dataclass_transform

__all__ = ["frozen_record", "mutable_record"]

T = TypeVar("T", bound=type)


class _Factory:
    """The default of a parameter whose field has a ``default_factory`` (the dataclass's
    ``_HAS_DEFAULT_FACTORY``, shown as it is)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


def _key(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """A getter of ``names`` as one tuple (``attrgetter`` gives one value for one name)."""
    if not names:
        return lambda _: ()
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda self: (one(self),)
    return attrgetter(*names)


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is self.__class__:
        compared = self.__class__.__record_compared__
        return compared(self) == compared(other)
    return NotImplemented


def _hash(self: Any) -> int:
    return hash(self.__class__.__record_hashed__(self))


@reprlib.recursive_repr()
def _repr(self: Any) -> str:
    cls = self.__class__
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in cls.__record_shown__)
    return f"{cls.__qualname__}({shown})"


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def _getstate(self: Any) -> list[Any]:
    return [getattr(self, f.name) for f in dataclasses.fields(self)]


def _setstate(self: Any, state: list[Any]) -> None:
    for f, value in zip(dataclasses.fields(self), state, strict=True):
        object.__setattr__(self, f.name, value)


def _init_source(cls: type, frozen: bool) -> tuple[str, dict[str, Any]]:
    """The text of the dataclass's ``__init__`` for ``cls`` and the names it reads."""
    space: dict[str, Any] = {"_FACTORY": _FACTORY, "_set": object.__setattr__}
    params: list[str] = []
    keywords: list[str] = []
    body: list[str] = []
    for f in dataclasses.fields(cls):
        name = f.name
        default = f"_dflt_{name}"
        if f.default_factory is not MISSING:
            space[default] = f.default_factory
            value = f"{default}() if {name} is _FACTORY else {name}" if f.init else f"{default}()"
            param = f"{name}=_FACTORY"
        elif f.default is not MISSING:
            space[default] = f.default
            value = name if f.init else default
            param = f"{name}={default}"
        else:
            value = param = name
        if f.init:
            (keywords if f.kw_only else params).append(param)
        elif f.default is MISSING and f.default_factory is MISSING:
            continue
        body.append(f"_set(self, {name!r}, {value})" if frozen else f"self.{name} = {value}")
    if hasattr(cls, "__post_init__"):
        body.append("self.__post_init__()")
    signature = ", ".join(["self", *params, *(["*", *keywords] if keywords else [])])
    lines = "\n".join(f"  {line}" for line in body or ["pass"])
    return f"def __init__({signature}):\n{lines}\n", space


def _lazy_init(cls: type, frozen: bool) -> Callable[..., None]:
    """An ``__init__`` that compiles the real one on the class's first instance, puts it
    on the class in its own place, and runs it."""

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        text, space = _init_source(cls, frozen)
        exec(text, space)  # noqa: S102 - the text is made above from the class's own fields
        made = space["__init__"]
        made.__qualname__ = f"{cls.__qualname__}.__init__"
        made.__module__ = cls.__module__
        type.__setattr__(cls, "__init__", made)
        made(self, *args, **kwargs)

    return __init__


def _make(cls: type, frozen: bool) -> type:
    bases = [
        vars(b)["__dataclass_params__"]
        for b in cls.__mro__[1:]
        if "__dataclass_params__" in vars(b)
    ]
    if bases and frozen != any(params.frozen for params in bases):
        frozen_text = "frozen" if frozen else "non-frozen"
        other = "non-frozen" if frozen else "frozen"
        raise TypeError(f"cannot inherit {frozen_text} dataclass from a {other} one")
    # A frozen record's base is frozen to dataclasses: the subclass is made frozen by them
    # too (its __setattr__ and __delattr__ compiled), as a dataclass requires.
    frozen_base = bool(bases) and frozen
    made: type = dataclasses.dataclass(
        cls, init=False, repr=False, eq=False, frozen=frozen_base, slots=True
    )
    params = made.__dataclass_params__  # type: ignore[attr-defined]
    params.init = params.repr = params.eq = True  # as a dataclass subclass of it reads them
    params.frozen = frozen
    fields: tuple[Field[Any], ...] = dataclasses.fields(made)
    compared = tuple(f.name for f in fields if f.compare)
    hashed = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
    own = made.__dict__
    setattr_ = type.__setattr__
    setattr_(made, "__record_compared__", staticmethod(_key(compared)))
    setattr_(made, "__record_hashed__", staticmethod(_key(hashed)))
    setattr_(made, "__record_shown__", tuple(f.name for f in fields if f.repr))
    if "__init__" not in own:
        setattr_(made, "__init__", _lazy_init(made, frozen))
    if "__repr__" not in own:
        setattr_(made, "__repr__", _repr)
    if "__eq__" not in own:
        setattr_(made, "__eq__", _eq)
    if frozen:
        if "__hash__" not in own or own["__hash__"] is None:
            setattr_(made, "__hash__", _hash)
        setattr_(made, "__setattr__", _frozen_setattr)
        setattr_(made, "__delattr__", _frozen_delattr)
        setattr_(made, "__getstate__", _getstate)
        setattr_(made, "__setstate__", _setstate)
    elif "__hash__" not in own or own["__hash__"] is None:
        setattr_(made, "__hash__", None)
    return made


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, Field))
def frozen_record(cls: T) -> T:
    """``@dataclass(frozen=True, slots=True)``, cheaper to define (module doc)."""
    return _make(cls, frozen=True)  # type: ignore[return-value]


@dataclass_transform(field_specifiers=(dataclasses.field, Field))
def mutable_record(cls: T) -> T:
    """``@dataclass(slots=True)``, cheaper to define (module doc)."""
    return _make(cls, frozen=False)  # type: ignore[return-value]
