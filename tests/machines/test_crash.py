"""HZ_CRASH_AT: parsing and the on_durable hook (real exits are in test_crashmatrix)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger.event import make_event
from machines.crashkit.crash import (
    CRASH_EXIT,
    CrashPoint,
    body_crash_hook,
    body_sync_crash_hook,
    crash_at,
    crash_hook,
    parse,
)
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

    def test_a_body_sync_point_belongs_to_the_body_sync_hook_only(self, tmp_path: Path) -> None:
        """body-sync-lost:2 exits at the second body sync, after removing the bodies that
        sync's directory fsync had not yet made durable and cutting the spine back; the
        spine's and the body writes' hooks never fire for it."""
        environ = {"HZ_CRASH_AT": "body-sync-lost:2"}
        assert parse(environ["HZ_CRASH_AT"]) == CrashPoint(n=2, body=True, lost=True, sync=True)
        assert body_crash_hook(environ) is None
        assert body_sync_crash_hook({"HZ_CRASH_AT": "body:1"}) is None
        exits: list[int] = []
        cuts: list[bool] = []
        crash_hook(environ, exit_=exits.append)(event("turn.finished"))  # type: ignore[arg-type]
        hook = body_sync_crash_hook(
            environ, exit_=exits.append, power_cut=lambda: cuts.append(True)
        )
        assert hook is not None
        body = tmp_path / "t1.jsonl"
        body.write_text("{}\n")
        hook(())
        assert (exits, cuts, body.exists()) == ([], [], True)
        hook((body,))
        assert (exits, cuts, body.exists()) == ([CRASH_EXIT], [True], False)

    @pytest.mark.parametrize(
        "bad",
        ["after:", "append:0", "append:x", "before:turn.started", "x", "at:", "body-sync:0"],
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
