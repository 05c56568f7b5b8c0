"""The effect ledger: started before, outcome after, own event, probes and retries."""

from __future__ import annotations

import asyncio

import pytest

from machines.core.effects import (
    Effect,
    EffectFailed,
    LocalProbe,
    WorldProbe,
    recorded_in,
    run_effect,
)
from machines.core.fold import fold
from machines.crashkit.testing import (
    FakeWorld,
    FlakyError,
    Harness,
    ManualClock,
    RecordingSleep,
    SimulatedCrash,
)
from machines.stores.journal import InMemoryJournal


def effect(world: FakeWorld, *, attempts: int = 3) -> Effect:
    return Effect(
        "place_draft",
        "hz-x@v1@slot@doc:a",
        world.perform,
        WorldProbe(world.probe),
        "draft.placed",
        {"asset": "doc:a"},
        attempts=attempts,
    )


def run(journal: InMemoryJournal, eff: Effect, sleep: RecordingSleep | None = None) -> str:
    record = fold("t1", journal.turn_events("t1")).effects.get(eff.key)
    return asyncio.run(
        run_effect(eff, journal=journal, turn="t1", record=record, sleep=sleep or RecordingSleep())
    )


class TestEffectLedger:
    def test_started_is_durable_before_the_effect_and_done_after(self) -> None:
        """The world is written between effect.started and effect.done."""
        world = FakeWorld()
        journal = InMemoryJournal(ManualClock())
        seen: list[int] = []

        async def perform(key: str) -> object:
            seen.append(len(journal.events))
            return await world.perform(key)

        eff = effect(world)
        eff = Effect(eff.name, eff.key, perform, eff.probe, eff.event, eff.event_data)
        run(journal, eff)
        assert seen == [1]
        assert [e.kind for e in journal.events] == ["effect.started", "effect.done", "draft.placed"]
        assert {e.key for e in journal.events} == {eff.key}

    def test_the_own_event_carries_the_key_once_and_the_result_hash(self) -> None:
        """draft.placed has the key in its envelope only, and effect.done's hash."""
        journal = InMemoryJournal(ManualClock())
        digest = run(journal, effect(FakeWorld()))
        placed = journal.events[-1]
        assert (placed.key, placed.data["hash"], placed.data["asset"]) == (
            "hz-x@v1@slot@doc:a",
            digest,
            "doc:a",
        )
        assert "key" not in placed.data

    def test_a_done_effect_is_not_performed_again(self) -> None:
        """Running the same key twice in a turn performs once."""
        world = FakeWorld()
        journal = InMemoryJournal(ManualClock())
        run(journal, effect(world))
        run(journal, effect(world))
        assert world.performed == {"hz-x@v1@slot@doc:a": 1}
        assert len(journal.events) == 3

    def test_done_without_its_own_event_writes_only_the_event(self) -> None:
        """A crash between effect.done and draft.placed: resume writes draft.placed."""
        world = FakeWorld()
        journal = InMemoryJournal(ManualClock())
        journal.append(
            "effect.started", {"effect": "place_draft"}, turn="t1", key="hz-x@v1@slot@doc:a"
        )
        journal.append("effect.done", {"hash": "sha256:1"}, turn="t1", key="hz-x@v1@slot@doc:a")
        run(journal, effect(world))
        assert world.performed == {}
        assert journal.events[-1].kind == "draft.placed"

    def test_a_retryable_error_is_retried_with_the_injected_sleep(self) -> None:
        """Two retryable failures then success: performed once, slept twice."""
        world = FakeWorld()
        world.failures = [FlakyError("busy", retryable=True), FlakyError("busy", retryable=True)]
        sleep = RecordingSleep()
        journal = InMemoryJournal(ManualClock())
        run(journal, effect(world), sleep)
        assert (len(sleep.calls), world.performed) == (2, {"hz-x@v1@slot@doc:a": 1})

    def test_an_error_that_is_not_retryable_fails_at_once(self) -> None:
        """A non-retryable error records effect.failed and raises HZM021."""
        world = FakeWorld()
        world.failures = [FlakyError("denied", retryable=False)]
        sleep = RecordingSleep()
        journal = InMemoryJournal(ManualClock())
        with pytest.raises(EffectFailed) as raised:
            run(journal, effect(world), sleep)
        assert raised.value.code == "HZM021" and sleep.calls == []
        assert [e.kind for e in journal.events] == ["effect.started", "effect.failed"]
        assert journal.events[-1].data == {"error": "FlakyError"}

    def test_retries_stop_at_the_effect_attempts(self) -> None:
        """Always retryable: tried three times, then failed."""
        world = FakeWorld()
        world.failures = [FlakyError("busy", retryable=True) for _ in range(5)]
        journal = InMemoryJournal(ManualClock())
        with pytest.raises(EffectFailed):
            run(journal, effect(world))
        assert len(world.failures) == 2

    def test_a_failed_effect_is_not_performed_again(self) -> None:
        """A recorded effect.failed raises again without performing."""
        world = FakeWorld()
        world.failures = [FlakyError("denied", retryable=False)]
        journal = InMemoryJournal(ManualClock())
        with pytest.raises(EffectFailed):
            run(journal, effect(world))
        with pytest.raises(EffectFailed):
            run(journal, effect(world))
        assert world.performed == {}

    def test_a_failed_effect_fails_the_turn_with_its_code(self) -> None:
        """In a turn, a failing place_draft ends the turn failed HZM021."""
        h = Harness.make()
        h.world.failures = [FlakyError("denied", retryable=False)]
        state = h.start()
        assert (state.state, state.error) == ("failed", "HZM021")


class TestLocalProbe:
    def test_a_local_effect_found_in_the_journal_is_not_performed(self) -> None:
        """A question already asked under its key (in any turn) is present."""
        world = FakeWorld()
        journal = InMemoryJournal(ManualClock())
        key = "hz-x@question:t0:1"
        journal.append("question.asked", {"key": key}, turn="t0", key=key)
        journal.append("effect.started", {"effect": "ask"}, turn="t1", key=key)
        probe = LocalProbe(recorded_in(journal, "question.asked"))
        eff = Effect("ask", key, world.perform, probe, "question.asked")
        run(journal, eff)
        assert world.performed == {}
        assert journal.events[-2].data["probed"] is True

    def test_a_local_effect_not_in_its_record_is_performed_once(self) -> None:
        """started without a local record: absent, performed once."""
        h = Harness.make(decision="ask", probe="local")
        h.crash_after = 6
        with pytest.raises(SimulatedCrash):
            h.start()
        state = h.resume()
        assert state.disposition == "asked"
        assert list(h.world.performed.values()) == [1]


class TestKeysAcrossTurns:
    def test_a_key_done_in_another_turn_is_not_performed_again(self) -> None:
        """Each key is idempotent on its own, whichever turn asks."""
        world = FakeWorld()
        journal = InMemoryJournal(ManualClock())
        digest = run(journal, effect(world))
        record = fold("t2", journal.turn_events("t2")).effects.get("hz-x@v1@slot@doc:a")
        again = asyncio.run(
            run_effect(
                effect(world), journal=journal, turn="t2", record=record, sleep=RecordingSleep()
            )
        )
        assert (again, world.performed, len(journal.events)) == (
            digest,
            {"hz-x@v1@slot@doc:a": 1},
            3,
        )

    def test_a_key_started_in_another_turn_is_probed_first(self) -> None:
        """Started elsewhere without an outcome and present in the world: not performed."""
        world = FakeWorld()
        world.performed["hz-x@v1@slot@doc:a"] = 1
        journal = InMemoryJournal(ManualClock())
        journal.append(
            "effect.started", {"effect": "place_draft"}, turn="t1", key="hz-x@v1@slot@doc:a"
        )
        asyncio.run(
            run_effect(
                effect(world), journal=journal, turn="t2", record=None, sleep=RecordingSleep()
            )
        )
        assert world.performed == {"hz-x@v1@slot@doc:a": 1}
        assert [(e.turn, e.kind) for e in journal.events][1:] == [
            ("t2", "effect.started"),
            ("t2", "effect.done"),
            ("t2", "draft.placed"),
        ]
