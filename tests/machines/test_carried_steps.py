"""Step starts carried by the next line (docs/spine.md, "Steps carried by the next line").

A line may carry the ``step.started`` checkpoints of its turn that came just before it in
``data.steps`` (``{step: input}``). The fold, `expand_steps` and the ``after:step.started``
crash point read such a spine as the same turn written one line per step.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ledger.event import Event, make_event
from machines.core.fold import fold
from machines.core.values import acted_data
from machines.crashkit.crash import crash_hook
from machines.errors import MachineError
from machines.stores.journal import (
    expand_carried,
    expand_steps,
    keys_of,
    without_carried,
    without_steps,
)
from machines.stores.spine_journal import done_in_file

TS = "2026-10-30T15:00:00.000Z"
KEY = "hz-x@v1@slot@file:/w/report.md"


def _events(lines: list[tuple[str, dict[str, Any], str | None]]) -> list[Event]:
    events: list[Event] = []
    for kind, data, key in lines:
        prev = events[-1].hash if events else None
        events.append(
            make_event(
                seq=len(events) + 1, ts=TS, prev=prev, kind=kind, data=data, turn="t", key=key
            )
        )
    return events


ONE_LINE_PER_STEP = _events(
    [
        ("turn.started", {"cause": "schedule"}, "hz-x@slot"),
        ("step.started", {"step": "think", "input": "a1"}, None),
        ("model.request", {"n": 1, "hash": "b1", "tokens": 3}, None),
        ("step.started", {"step": "outcome", "input": "c1"}, None),
        ("step.started", {"step": "act", "input": "c1"}, None),
        ("effect.started", {"effect": "place_draft"}, KEY),
        ("effect.done", {"hash": "sha256:d1"}, KEY),
        ("draft.placed", {"asset": "file:/w/report.md", "output": "s", "hash": "sha256:d1"}, KEY),
        ("step.started", {"step": "finish", "input": "e1"}, None),
        ("turn.finished", {"disposition": "drafted", "usd": 0.0, "duration_ms": 0}, None),
    ]
)

CARRIED = _events(
    [
        ("turn.started", {"cause": "schedule"}, "hz-x@slot"),
        ("model.request", {"n": 1, "hash": "b1", "tokens": 3, "steps": {"think": "a1"}}, None),
        ("effect.started", {"effect": "place_draft", "steps": {"outcome": "c1", "act": "c1"}}, KEY),
        ("effect.done", {"hash": "sha256:d1"}, KEY),
        ("draft.placed", {"asset": "file:/w/report.md", "output": "s", "hash": "sha256:d1"}, KEY),
        (
            "turn.finished",
            {"disposition": "drafted", "usd": 0.0, "duration_ms": 0, "steps": {"finish": "e1"}},
            None,
        ),
    ]
)


def _plain(events: Any) -> list[tuple[str, dict[str, Any], str | None]]:
    return [(e.kind, dict(e.data), e.key) for e in events]


class TestCarriedSteps:
    def test_expanding_gives_the_one_line_per_step_stream(self) -> None:
        """Carried steps come out as their own events, in step order, before their carrier
        (``act`` sorts before ``outcome`` in the canonical line and still comes after it)."""
        assert _plain(expand_steps(CARRIED)) == _plain(ONE_LINE_PER_STEP)

    def test_an_old_spine_expands_to_itself(self) -> None:
        assert _plain(expand_steps(ONE_LINE_PER_STEP)) == _plain(ONE_LINE_PER_STEP)

    def test_both_forms_fold_alike(self) -> None:
        old, new = fold("t", ONE_LINE_PER_STEP), fold("t", CARRIED)
        assert new.state == old.state == "finished"
        assert (
            new.inputs
            == old.inputs
            == {
                "gather": None,
                "think": "a1",
                "outcome": "c1",
                "act": "c1",
                "finish": "e1",
            }
        )
        assert new.effects == old.effects and new.disposition == "drafted"

    def test_a_carried_step_the_table_does_not_allow_is_refused(self) -> None:
        """A carrier naming a step out of order fails the fold (HZM010), as its own line would."""
        bad = _events(
            [
                ("turn.started", {"cause": "schedule"}, "hz-x@slot"),
                ("model.request", {"n": 1, "hash": "b1", "steps": {"act": "a1"}}, None),
            ]
        )
        with pytest.raises(MachineError) as caught:
            fold("t", bad)
        assert caught.value.code == "HZM010"

    def test_without_steps_is_the_line_as_asked_for(self) -> None:
        assert dict(without_steps(CARRIED[1]).data) == {"n": 1, "hash": "b1", "tokens": 3}
        assert without_steps(ONE_LINE_PER_STEP[1]) is ONE_LINE_PER_STEP[1]

    def test_after_step_started_crashes_after_the_first_carrier(self) -> None:
        exits: list[int] = []
        hook = crash_hook({"HZ_CRASH_AT": "after:step.started"}, exit_=exits.append)
        hook(CARRIED[0])
        assert exits == []
        hook(CARRIED[1])
        assert exits == [137]


CARRIED_END = _events(
    [
        ("turn.started", {"cause": "schedule"}, "hz-x@slot"),
        ("model.request", {"n": 1, "hash": "b1", "tokens": 3, "steps": {"think": "a1"}}, None),
        ("effect.started", {"effect": "place_draft", "steps": {"outcome": "c1", "act": "c1"}}, KEY),
        (
            "turn.finished",
            {
                "disposition": "drafted",
                "usd": 0.0,
                "duration_ms": 0,
                "steps": {"finish": "e1"},
                "done": {
                    KEY: {
                        "hash": "sha256:d1",
                        "draft.placed": {"asset": "file:/w/report.md", "output": "s"},
                    }
                },
            },
            None,
        ),
    ]
)
"""The same turn as hz writes it now: the effect's end rides on ``turn.finished``."""


class TestCarriedEffectEnds:
    """An effect's ``effect.done`` and ``draft.placed`` carried by the turn's next line
    (``data.done``) read as the lines of their own an older spine holds."""

    def test_expanding_gives_the_one_line_per_event_stream(self) -> None:
        assert _plain(expand_carried(CARRIED_END)) == _plain(ONE_LINE_PER_STEP)
        assert _plain(expand_carried(CARRIED)) == _plain(ONE_LINE_PER_STEP)  # older forms

    def test_the_fold_is_the_same(self) -> None:
        old, new = fold("t", ONE_LINE_PER_STEP), fold("t", CARRIED_END)
        assert new.disposition == old.disposition == "drafted"
        assert new.effects == old.effects
        assert new.effects[KEY].event_seen and new.effects[KEY].outcome == "done"

    def test_the_carrier_speaks_for_the_effects_key(self) -> None:
        assert keys_of(CARRIED_END[3]) == [KEY]
        assert without_carried(CARRIED_END[3]).data == {
            "disposition": "drafted",
            "usd": 0.0,
            "duration_ms": 0,
        }

    @pytest.mark.parametrize("kind", ["effect.done", "draft.placed", "turn.finished"])
    def test_after_a_carried_kind_crashes_after_its_carrier(self, kind: str) -> None:
        exits: list[int] = []
        hook = crash_hook({"HZ_CRASH_AT": f"after:{kind}"}, exit_=exits.append)
        for event in CARRIED_END[:3]:
            hook(event)
        assert exits == []
        hook(CARRIED_END[3])
        assert exits == [137]

    def test_the_done_is_found_in_the_file_by_its_key(self, tmp_path: Path) -> None:
        """The effect ledger's byte search (`recorded_done`) finds a carried end."""
        path = tmp_path / "session.jsonl"
        path.write_bytes(b"".join(e.line() for e in CARRIED_END))
        assert done_in_file(path, KEY) == "sha256:d1"
        carrier = sum(len(e.line()) for e in CARRIED_END[:3])  # where turn.finished starts
        assert done_in_file(path, KEY, start=carrier) == "sha256:d1"
        assert done_in_file(path, "hz-x@v1@slot@file:/w/other.md") is None


@pytest.mark.parametrize("name", ["steps", "done"])
def test_acted_data_may_not_name_what_a_line_carries(name: str) -> None:
    """``turn.finished`` carries steps and an effect's end under these names: a host's
    `Acted` data that used one would be read as carried events (HZM073 instead)."""
    with pytest.raises(MachineError) as caught:
        acted_data({name: {"finish": "e1"}, "report": "ok"})
    assert caught.value.code == "HZM073"
