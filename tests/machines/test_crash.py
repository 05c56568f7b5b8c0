"""HZ_CRASH_AT: parsing and the on_durable hook (real exits are in test_crashmatrix)."""

from __future__ import annotations

import pytest

from ledger.event import make_event
from machines.crash import CRASH_EXIT, CrashPoint, crash_at, crash_hook, parse
from machines.errors import MachineError


def event(kind: str) -> object:
    return make_event(seq=1, ts="2026-01-01T00:00:00.000Z", prev=None, kind=kind, data={})


class TestCrashPoints:
    def test_both_forms_parse(self) -> None:
        """after:<kind> and append:<n>."""
        assert (parse("after:effect.started"), parse("append:3")) == (
            CrashPoint(kind="effect.started"),
            CrashPoint(n=3),
        )

    def test_a_named_point_exits_there_only(self) -> None:
        """at:<name> exits at `crash_at(name)`, not at another name nor at any event."""
        exits: list[int] = []
        environ = {"HZ_CRASH_AT": "at:staged"}
        crash_at("elsewhere", environ, exit_=exits.append)
        crash_hook(environ, exit_=exits.append)(event("turn.started"))  # type: ignore[arg-type]
        assert exits == []
        crash_at("staged", environ, exit_=exits.append)
        assert (parse("at:staged"), exits) == (CrashPoint(name="staged"), [CRASH_EXIT])

    @pytest.mark.parametrize(
        "bad", ["after:", "append:0", "append:x", "before:turn.started", "x", "at:"]
    )
    def test_a_bad_point_is_a_coded_error(self, bad: str) -> None:
        """Anything else is HZM050."""
        with pytest.raises(MachineError, match="HZM050"):
            parse(bad)

    def test_unset_is_a_no_op(self) -> None:
        """Without HZ_CRASH_AT the hook never exits."""
        exits: list[int] = []
        hook = crash_hook({}, exit_=exits.append)
        for _ in range(5):
            hook(event("turn.started"))  # type: ignore[arg-type]
        assert exits == []

    def test_append_n_exits_after_the_nth_append(self) -> None:
        """append:2 exits with 137 on the second durable event only."""
        exits: list[int] = []
        hook = crash_hook({"HZ_CRASH_AT": "append:2"}, exit_=exits.append)
        hook(event("a"))  # type: ignore[arg-type]
        assert exits == []
        hook(event("b"))  # type: ignore[arg-type]
        assert exits == [CRASH_EXIT]

    def test_after_kind_exits_after_that_kind(self) -> None:
        """after:effect.done exits once effect.done is durable."""
        exits: list[int] = []
        hook = crash_hook({"HZ_CRASH_AT": "after:effect.done"}, exit_=exits.append)
        hook(event("effect.started"))  # type: ignore[arg-type]
        hook(event("effect.done"))  # type: ignore[arg-type]
        assert exits == [CRASH_EXIT]
