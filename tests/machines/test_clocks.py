"""Time as a turn counts it: a wall clock that jumps inside a running step is not
running time (the monotonic part of the injected clock bounds it), and turn ids sort
by start when the clock is set back."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import pytest

from machines.core.context import TurnContext
from machines.core.resume import Pins, TurnIds, new_turn_id
from machines.core.runner import Settings
from machines.core.session import Session
from machines.crashkit.testing import Harness, ManualClock, RecordingSleep, SimulatedCrash
from machines.errors import MachineError
from machines.keys import Wake

WAKE = [Wake("asked", "hz-test@r1")]


def suspended(h: Harness) -> None:
    """The laptop sleeps for an hour in the middle of think: the wall clock jumps."""

    def sleep_an_hour(_ctx: TurnContext) -> None:
        h.clock.now += timedelta(hours=1)

    h.steps.hooks["think"] = sleep_an_hour


class TestRunningTime:
    def test_a_wall_clock_jump_inside_a_step_neither_counts_nor_times_the_turn_out(
        self,
    ) -> None:
        """A wall clock alone: Settings measures on ``time.monotonic``; a ten-minute timeout,
        an hour's jump of the wall clock during think; the turn finishes and its
        recorded running time is not the hour."""
        h = Harness.make()
        wall = h.clock.__call__  # a bare clock, without a monotonic part of its own
        settings = Settings(clock=wall, sleep=RecordingSleep(), timeout=timedelta(minutes=10))
        assert settings.monotonic_of() is time.monotonic
        suspended(h)
        state = asyncio.run(
            Session(h.journal, h.body, h.steps, settings).start("t1", WAKE, Pins(1))
        )
        assert (state.state, state.disposition) == ("finished", "drafted")
        finished = h.journal.turn_events("t1")[-1]
        assert finished.data["duration_ms"] < 60_000
        assert state.running_ms < 60_000

    def test_time_that_passes_in_a_step_still_counts(self) -> None:
        """Eleven minutes of think on both parts of the clock: abandoned timeout."""
        h = Harness.make()
        h.steps.hooks["think"] = lambda _ctx: h.clock.advance(minutes=11)
        state = h.start()
        assert (state.state, state.reason) == ("abandoned", "timeout")

    def test_the_manual_clock_jumps_its_wall_part_alone(self) -> None:
        """`ManualClock.jump` is the suspended laptop for a host's own tests."""
        h = Harness.make()
        h.steps.hooks["think"] = lambda _ctx: h.clock.jump(hours=2)
        state = h.start()
        assert (state.state, state.disposition) == ("finished", "drafted")
        assert h.journal.turn_events("t1")[-1].data["duration_ms"] == 0

    def test_a_step_reading_its_time_left_does_not_count_the_jump(self) -> None:
        """A step that budgets its model request by ``ctx.state.running_ms_at(now)``
        (as hz's steps do) sees seconds, not the hour the wall clock jumped."""
        h = Harness.make()
        settings = Settings(clock=h.clock, sleep=RecordingSleep())
        read: list[int] = []

        def jump_then_read(ctx: TurnContext) -> None:
            h.clock.now += timedelta(hours=1)
            read.append(ctx.state.running_ms_at(h.clock()))

        h.steps.hooks["outcome"] = jump_then_read
        asyncio.run(Session(h.journal, h.body, h.steps, settings).start("t1", WAKE, Pins(1)))
        assert len(read) == 1 and read[0] < 60_000

    def test_a_jump_before_a_crash_does_not_time_out_the_recovery(self) -> None:
        """The laptop sleeps an hour in think, then the process is killed after
        outcome's checkpoint: the line written after the jump records what the
        monotonic clock measured (``ran_ms``), so the recovery, which has only the
        spine, resumes and finishes instead of ending abandoned timeout."""
        h = Harness.make()
        h.settings = Settings(clock=h.clock, sleep=RecordingSleep(), timeout=timedelta(minutes=10))
        suspended(h)
        h.crash_after = 4  # turn.started, step.started think, model.request, step.started
        with pytest.raises(SimulatedCrash):
            h.start()
        h.steps.hooks.clear()
        state = h.resume()
        assert (state.state, state.disposition) == ("finished", "drafted")
        bounded = [e for e in h.journal.events if "ran_ms" in e.data]
        assert [e.kind for e in bounded] == ["model.request"]  # one line, after the jump

    def test_no_checkpoint_carries_ran_ms_while_the_clocks_agree(self) -> None:
        """Without a jump no line is longer for it."""
        h = Harness.make()
        h.steps.hooks["think"] = lambda _ctx: h.clock.advance(minutes=5)
        h.start()
        assert not [e for e in h.journal.events if "ran_ms" in e.data]

    def test_the_monotonic_part_is_the_settings_then_the_clocks_then_the_process(
        self,
    ) -> None:
        """``Settings.monotonic`` when given, else the injected clock's ``monotonic``
        (ManualClock's), else ``time.monotonic``."""
        clock = ManualClock()

        def mine() -> float:
            return 0.0

        assert Settings(clock, RecordingSleep(), monotonic=mine).monotonic_of() is mine
        assert Settings(clock, RecordingSleep()).monotonic_of() == clock.monotonic
        assert Settings(clock.__call__, RecordingSleep()).monotonic_of() is time.monotonic


class TestTurnIds:
    def test_turn_ids_sort_by_start_when_the_clock_is_set_back(self) -> None:
        """Set back an hour between turns (and within one millisecond): every id
        minted later sorts after every id minted before."""
        clock = ManualClock()
        minted = [new_turn_id(clock) for _ in range(3)]
        clock.jump(hours=-1)
        minted += [new_turn_id(clock) for _ in range(3)]
        clock.jump(minutes=30)
        minted.append(new_turn_id(clock))
        assert minted == sorted(minted) and len(set(minted)) == len(minted)

    def test_a_restarted_host_continues_after_its_last_turn(self) -> None:
        """`TurnIds(after=...)`: a new process whose clock was set back still mints
        ids after the last turn its journal holds."""
        clock = ManualClock()
        last = TurnIds().mint(clock)
        clock.jump(days=-1)
        assert all(TurnIds(after=last).mint(clock) > last for _ in range(200))
        assert TurnIds().mint(clock) < last  # without it, the clock decides

    def test_a_bad_id_to_continue_after_is_refused(self) -> None:
        with pytest.raises(MachineError, match="HZM082"):
            TurnIds(after="turn-not-a-ulid")
