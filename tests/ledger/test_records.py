"""``frozen_record`` behaves as ``@dataclass(frozen=True, slots=True)`` for everything hz uses of
one: construction, defaults, factories, ``__post_init__``, equality, hash, repr, frozen
fields, pickling, copying, ``fields``/``replace``/``asdict``, ``match``; and
``mutable_record`` as ``@dataclass(slots=True)``. Each class is written twice, once with
the dataclass decorator and once with ours, and the two must agree."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
import re
from collections.abc import Callable
from dataclasses import FrozenInstanceError, dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ledger.records import frozen_record, mutable_record

Decorator = Callable[[type], type]


def shapes(frozen: Decorator, mutable: Decorator) -> dict[str, type]:
    """The shapes of record hz defines, made with the given decorators."""

    @frozen
    class Plain:
        """Three fields."""

        seq: int
        kind: str
        data: tuple[str, ...]

    @frozen
    class Defaults:
        """A default, a factory, a field out of comparison, repr and ``__init__``."""

        name: str
        count: int = 0
        items: tuple[int, ...] = field(default_factory=tuple)
        note: str = field(default="", compare=False)
        hidden: str = field(default="x", repr=False)
        state: str = field(default="pending", init=False)

    @frozen
    class Checked:
        """A ``__post_init__`` that checks and refuses."""

        low: int
        high: int

        def __post_init__(self) -> None:
            if self.low > self.high:
                raise ValueError("low above high")

    @frozen
    class Child(Plain):
        """A record that extends another."""

        extra: str = "more"

    @frozen
    class Empty:
        """No fields at all."""

    @mutable
    class Counter:
        """A mutable one with a factory."""

        name: str
        seen: list[str] = field(default_factory=list)

    return {
        "Plain": Plain,
        "Defaults": Defaults,
        "Checked": Checked,
        "Child": Child,
        "Empty": Empty,
        "Counter": Counter,
    }


def placed(made: dict[str, type], prefix: str) -> dict[str, type]:
    """The classes as globals of this module, so that pickle finds them by name."""
    for name, cls in made.items():
        cls.__qualname__ = cls.__name__ = f"{prefix}{name}"
        globals()[cls.__qualname__] = cls
    return made


OURS = placed(shapes(frozen_record, mutable_record), "Ours")
THEIRS = placed(shapes(dataclass(frozen=True, slots=True), dataclass(slots=True)), "Theirs")
ARGS: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
    "Plain": ((1, "a", ("k",)), {}),
    "Defaults": (("n",), {"count": 2, "note": "hi"}),
    "Checked": ((1, 2), {}),
    "Child": ((1, "a", ()), {"extra": "e"}),
    "Empty": ((), {}),
    "Counter": (("c",), {}),
}


def both(name: str) -> tuple[Any, Any]:
    args, kwargs = ARGS[name]
    return OURS[name](*args, **kwargs), THEIRS[name](*args, **kwargs)


@pytest.mark.parametrize("name", sorted(ARGS))
def test_a_record_is_made_and_shown_as_the_dataclass(name: str) -> None:
    """The same fields, values, repr, ``asdict``, slots and ``__match_args__``."""
    ours, theirs = both(name)
    assert [f.name for f in dataclasses.fields(ours)] == [
        f.name for f in dataclasses.fields(theirs)
    ]
    assert dataclasses.asdict(ours) == dataclasses.asdict(theirs)
    assert repr(ours).removeprefix("Ours") == repr(theirs).removeprefix("Theirs")
    assert type(ours).__slots__ == type(theirs).__slots__
    assert type(ours).__match_args__ == type(theirs).__match_args__
    assert not hasattr(ours, "__dict__")
    assert dataclasses.is_dataclass(ours)


@pytest.mark.parametrize("name", sorted(ARGS))
def test_a_records_init_has_the_dataclasss_signature(name: str) -> None:
    """After its first instance (when it is compiled) the class's signature is the
    dataclass's, annotations aside."""
    both(name)
    ours = inspect.signature(OURS[name])
    theirs = inspect.signature(THEIRS[name])
    plain = [str(p.replace(annotation=inspect.Parameter.empty)) for p in theirs.parameters.values()]
    assert [str(p) for p in ours.parameters.values()] == plain


@pytest.mark.parametrize("name", ["Plain", "Defaults", "Checked", "Child", "Empty"])
def test_a_record_compares_hashes_and_freezes_as_the_dataclass(name: str) -> None:
    """Equal to an equal one of its class, unequal to another class's, hashed alike when
    equal, and no field may be assigned or deleted."""
    ours, theirs = both(name)
    again, _ = both(name)
    assert ours == again and hash(ours) == hash(again)
    assert ours != theirs and (ours == theirs) == (theirs == ours)
    for one in (ours, theirs):
        for f in dataclasses.fields(one):
            with pytest.raises(FrozenInstanceError):
                setattr(one, f.name, None)
            with pytest.raises(FrozenInstanceError):
                delattr(one, f.name)


def test_fields_out_of_comparison_do_not_change_equality_or_hash() -> None:
    """``compare=False`` leaves a field out of ``==`` and ``hash``, as a dataclass does."""
    cls = OURS["Defaults"]
    one, other = cls("n", note="one"), cls("n", note="other")
    assert one == other and hash(one) == hash(other)
    assert cls("n", count=1) != cls("n", count=2)


def test_defaults_factories_and_post_init_run_as_the_dataclasss() -> None:
    """A factory makes a new value per instance, a field out of ``__init__`` gets its
    default, ``__post_init__`` runs and may refuse, and a missing argument is refused."""
    cls = OURS["Defaults"]
    one, other = cls("a"), cls("b")
    assert one.items == () == other.items
    assert OURS["Counter"]("a").seen is not OURS["Counter"]("a").seen
    assert one.state == "pending"
    with pytest.raises(TypeError):
        cls("a", state="approved")
    with pytest.raises(ValueError, match="low above high"):
        OURS["Checked"](3, 2)
    with pytest.raises(TypeError):
        OURS["Plain"](1, "a")


@pytest.mark.parametrize("name", sorted(ARGS))
def test_a_record_pickles_copies_and_replaces(name: str) -> None:
    """Pickle, ``copy``, ``deepcopy`` and ``dataclasses.replace`` give an equal record."""
    ours, _ = both(name)
    assert pickle.loads(pickle.dumps(ours)) == ours
    assert copy.copy(ours) == ours
    assert copy.deepcopy(ours) == ours
    assert dataclasses.replace(ours) == ours


def test_replace_changes_one_field() -> None:
    """``dataclasses.replace`` runs ``__init__`` (and so ``__post_init__``) again."""
    one = OURS["Plain"](1, "a", ())
    assert dataclasses.replace(one, kind="b") == OURS["Plain"](1, "b", ())
    with pytest.raises(ValueError):
        dataclasses.replace(OURS["Checked"](1, 2), low=5)


def test_a_record_matches_by_position() -> None:
    """``match`` takes the fields in order, as a dataclass's ``__match_args__`` says."""
    plain: Any = OURS["Plain"]
    match plain(7, "turn.started", ()):
        case plain(seq, kind):
            assert (seq, kind) == (7, "turn.started")
        case _:
            pytest.fail("no match")


def test_a_mutable_record_is_assigned_and_unhashable() -> None:
    """``mutable_record`` fields may be assigned; like a dataclass with ``eq``, it has no
    hash."""
    ours, theirs = both("Counter")
    ours.seen.append("x")
    ours.name = "renamed"
    assert ours == OURS["Counter"]("renamed", ["x"])
    for one in (ours, theirs):
        with pytest.raises(TypeError):
            hash(one)


def test_a_record_may_define_its_own_methods() -> None:
    """A class's own ``__eq__``, ``__hash__`` or ``__repr__`` is kept."""

    @frozen_record
    class Loud:
        """Its own repr."""

        name: str

        def __repr__(self) -> str:
            return f"LOUD {self.name}"

    assert repr(Loud("x")) == "LOUD x"
    assert Loud("x") == Loud("x") and hash(Loud("x")) == hash(Loud("x"))


def test_a_dataclass_may_extend_a_record() -> None:
    """A frozen dataclass may extend a frozen record (an embedder's subclass, a test's
    double), a plain one may not, as with a frozen dataclass; and a mutable record may
    not extend a frozen one."""
    base = OURS["Plain"]

    @dataclass(frozen=True)
    class Extended(base):  # type: ignore[valid-type,misc]
        more: int = 1

    one = Extended(1, "a", ())
    assert one == Extended(1, "a", ()) and one.more == 1
    with pytest.raises(FrozenInstanceError):
        one.more = 2  # type: ignore[misc]
    with pytest.raises(TypeError, match="non-frozen dataclass from a frozen"):
        dataclass(type("Loose", (base,), {"__annotations__": {"x": int}}))
    with pytest.raises(TypeError, match="non-frozen dataclass from a frozen"):
        mutable_record(type("Loose", (base,), {"__annotations__": {"x": int}}))


ROOT = Path(__file__).resolve().parents[2]
SLOTTED = re.compile(r"^\s*@(?:dataclasses\.)?dataclass\([^)]*slots=True", re.MULTILINE)


def test_hz_defines_its_slotted_dataclasses_as_records() -> None:
    """No module of ours writes ``@dataclass(..., slots=True)``: a frozen or mutable
    slotted record is a `frozen_record` or `mutable_record`, which costs a process a tenth
    to define (docs/daemon.md, "Where a drafted wake's share goes")."""
    written = [
        str(path.relative_to(ROOT))
        for package in ("ledger", "machines", "heinzel")
        for path in sorted((ROOT / package).rglob("*.py"))
        if SLOTTED.search(path.read_text(encoding="utf-8"))
    ]
    assert written == []
