"""Single flight, steering, requests, follow-ups and stop."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from machines.core.context import TurnContext
from machines.core.resume import Pins
from machines.core.session import Session
from machines.crashkit.testing import Harness, SimulatedCrash
from machines.errors import MachineError
from machines.keys import Wake

WAKE = [Wake("asked", "hz-test@r0")]


def session_of(h: Harness) -> Session:
    return Session(h.journal, h.body, h.steps, h.settings)


class TestSession:
    def test_a_message_during_think_steers_the_next_model_request(self) -> None:
        """turn.steered is journalled and the model's next request gets it."""
        h = Harness.make()
        s = session_of(h)
        deliveries: list[str] = []
        h.steps.hooks["think"] = lambda ctx: deliveries.append(
            s.message("r1", "sha256:m", "hz-test@r1")
        )
        asyncio.run(s.start("t1", WAKE, Pins(1)))
        steered = [e for e in h.journal.events if e.kind == "turn.steered"]
        assert deliveries == ["steered"]
        assert dict(steered[0].data) == {"request_id": "r1", "hash": "sha256:m"}
        assert [[x.request_id for x in seen] for seen in h.steps.steers_seen] == [["r1"]]

    def test_a_message_during_act_becomes_a_request_for_the_follow_up(self) -> None:
        """turn.requested{cause: asked, key} and follow_up returns the wake once."""
        h = Harness.make()
        s = session_of(h)
        h.steps.hooks["act"] = lambda ctx: s.message("r2", "sha256:m", "hz-test@r2")
        asyncio.run(s.start("t1", WAKE, Pins(1)))
        requested = next(e for e in h.journal.events if e.kind == "turn.requested")
        assert (requested.key, requested.data["cause"]) == ("hz-test@r2", "asked")
        assert s.follow_up() == [Wake("asked", "hz-test@r2")]
        assert s.follow_up() == []

    def test_other_wakes_while_awake_are_requested_and_coalesce(self) -> None:
        """Two wakes during the turn become one follow-up with both causes."""
        h = Harness.make()
        s = session_of(h)

        def wakes(ctx: TurnContext) -> None:
            s.request(Wake("source-changed", "hz-test@prs:f2"))
            s.request(Wake("schedule", "hz-test@slot2"))

        h.steps.hooks["outcome"] = wakes
        asyncio.run(s.start("t1", WAKE, Pins(1)))
        follow = s.follow_up()
        asyncio.run(s.start("t2", follow, Pins(1)))
        started = [e for e in h.journal.events if e.kind == "turn.started"][-1]
        assert (started.data["cause"], started.data["keys"]) == (
            "schedule",
            ["hz-test@slot2", "hz-test@prs:f2"],
        )

    def test_an_idle_session_reports_idle(self) -> None:
        """With no running turn a message is for a new turn; stop has nothing to do."""
        s = session_of(Harness.make())
        assert (s.message("r", "h", "k@r"), s.request(Wake("asked", "k@r")), s.stop()) == (
            "idle",
            "idle",
            False,
        )

    def test_stop_cancels_the_step_and_keeps_queued_messages(self) -> None:
        """A stopped turn ends abandoned stopped; a steer not yet delivered stays."""
        h = Harness.make()
        s = session_of(h)
        entered = asyncio.Event()

        async def block(ctx: TurnContext) -> Any:
            entered.set()
            await asyncio.Event().wait()

        h.steps.hooks["think"] = block

        async def main() -> Any:
            task = asyncio.create_task(s.start("t1", WAKE, Pins(1)))
            await entered.wait()
            with pytest.raises(MachineError, match="HZM040"):
                await s.start("t2", WAKE, Pins(1))
            assert s.message("r3", "sha256:q", "hz-test@r3") == "steered"
            assert s.stop()
            return await task

        state = asyncio.run(main())
        assert (state.state, state.reason, state.error) == ("abandoned", "stopped", None)
        assert [x.request_id for x in s.leftover_steers()] == ["r3"]
        assert s.running is None

    def test_resume_through_the_session_runs_the_waiting_turn(self) -> None:
        """A waiting turn resumed with woken_by answer finishes; a final one returns None."""
        h = Harness.make(decision="wait")
        s = session_of(h)
        asyncio.run(s.start("t1", WAKE, Pins(1)))
        state = asyncio.run(s.resume("t1", "answer"))
        assert state is not None and state.disposition == "drafted"
        assert asyncio.run(s.resume("t1")) is None

    def test_a_steer_journalled_before_a_crash_reaches_the_resumed_request(self) -> None:
        """turn.steered is durable; the model request after the resume receives it."""
        h = Harness.make()
        h.crash_after = 3
        fired: list[str] = []

        def steer(ctx: TurnContext) -> None:
            if not fired:
                fired.append("r9")
                ctx.journal.append("turn.steered", {"request_id": "r9", "hash": "h"}, turn=ctx.turn)

        h.steps.hooks["think"] = steer
        with pytest.raises(SimulatedCrash):
            h.start()
        h.resume()
        assert [[x.request_id for x in seen] for seen in h.steps.steers_seen] == [["r9"]]


class TestWake:
    def test_wakes_resume_open_turns_start_new_ones_and_skip_final_ones(self) -> None:
        """An open key resumes its turn, a new key starts one turn, a final key is dropped."""
        h = Harness.make()
        s = session_of(h)
        h.crash_after = 3
        with pytest.raises(SimulatedCrash):
            asyncio.run(s.start("t1", [Wake("asked", "hz-test@r1")], Pins(1)))
        s = session_of(h)
        wakes = [Wake("asked", "hz-test@r1"), Wake("schedule", "hz-test@s2")]
        ran = asyncio.run(s.wake(wakes, turn="t2", pins=Pins(1)))
        assert [(st.turn, st.disposition) for st in ran] == [("t1", "drafted"), ("t2", "drafted")]
        assert asyncio.run(s.wake(wakes, turn="t3", pins=Pins(1))) == []
        assert h.journal.turn_events("t3") == []

    def test_wakes_while_awake_become_requests(self) -> None:
        """During a turn, wake() records turn.requested for each wake."""
        h = Harness.make()
        s = session_of(h)
        later = [Wake("source-changed", "hz-test@prs:f")]
        got: list[list[object]] = []

        async def during(ctx: TurnContext) -> None:
            got.append(list(await s.wake(later, turn="tX", pins=Pins(1))))

        h.steps.hooks["act"] = during
        asyncio.run(s.start("t1", WAKE, Pins(1)))
        assert got == [[]] and s.follow_up() == later


class TestOneFlightPerJournal:
    """Two `Session`s over one journal in one process (an asyncio host's web handler and
    its background task) never run two turns at once: the second is refused (HZM041), so
    an effect is performed once."""

    def test_a_second_session_over_the_same_journal_is_refused_while_a_turn_runs(self) -> None:
        h = Harness.make()
        first, second = session_of(h), session_of(h)
        entered = asyncio.Event()
        release = asyncio.Event()

        async def hold(ctx: TurnContext) -> Any:
            if ctx.turn == "t1":  # only the first turn waits: a second one would run on
                entered.set()
                await release.wait()

        h.steps.hooks["think"] = hold

        async def main() -> Any:
            task = asyncio.create_task(first.start("t1", WAKE, Pins(1)))
            await entered.wait()
            with pytest.raises(MachineError, match="HZM041"):
                await second.start("t2", [Wake("asked", "hz-test@r9")], Pins(1))
            with pytest.raises(MachineError, match="HZM041"):
                await second.resume("t1")
            release.set()
            return await task

        state = asyncio.run(main())
        assert state.disposition == "drafted"
        assert sum(h.world.performed.values()) == 1
        started = [e.turn for e in h.journal.events if e.kind == "turn.started"]
        assert started == ["t1"]
        # once the first turn ended, the journal's flight is free for the other session
        after = asyncio.run(second.start("t3", [Wake("asked", "hz-test@r10")], Pins(1)))
        assert after.state == "finished"
