"""Keys and causes: the builders, the key rule and coalescing."""

from __future__ import annotations

import pytest

from machines import keys
from machines.core.resume import skip_turn
from machines.core.steps import Wait
from machines.crashkit.testing import Harness
from machines.errors import MachineError
from machines.keys import Wake, coalesce, key_action


class TestBuilders:
    def test_each_builder_gives_the_documented_shape(self) -> None:
        """Every cause and effect key, as docs/turns.md lists them."""
        assert [
            keys.schedule("hz-1", "2026-10-30T15:00"),
            keys.source_changed("hz-1", "prs", "fp9"),
            keys.discovered("hz-1", "doc:incidents"),
            keys.asked("hz-1", "req7"),
            keys.approval("hz-1", "section", "hz-1@v1@slot@file:r.md"),
            keys.created("hz-1"),
            keys.retry("hz-1", "req8"),
            keys.stale("hz-1", "section", "2026-11-06T15:00"),
            keys.place_draft("hz-1", 2, "2026-10-30T15:00", "doc:checkout/weekly-report"),
            keys.question("hz-1", "turn3", 1),
        ] == [
            "hz-1@2026-10-30T15:00",
            "hz-1@prs:fp9",
            "hz-1@discovered:doc:incidents",
            "hz-1@req7",
            "hz-1@approval:section:#3cd742d3ddb524e1",
            "hz-1@created",
            "hz-1@retry:req8",
            "hz-1@stale:section:2026-11-06T15:00",
            "hz-1@v2@2026-10-30T15:00@doc:checkout/weekly-report",
            "hz-1@question:turn3:1",
        ]

    def test_an_approval_key_names_one_draft_whatever_its_text(self) -> None:
        """Two drafts of the same text have two approval keys; a key of the older form
        (the text's hash) still names the drafts of that text."""
        first, second = "hz-1@v1@slot1@file:r.md", "hz-1@v1@slot2@file:r.md"
        key = keys.approval("hz-1", "section", first)
        assert key != keys.approval("hz-1", "section", second)
        assert keys.approval_names(key, first, "sha256:aa")
        assert not keys.approval_names(key, second, "sha256:aa")
        older = "hz-1@approval:section:sha256:aa"
        assert keys.approval_parts(older) == ("hz-1", "section", "sha256:aa")
        assert keys.approval_names(older, first, "sha256:aa")
        assert not keys.approval_names(older, first, "sha256:bb")

    @pytest.mark.parametrize("bad", ["", "a b", "x@y"])
    def test_a_bad_part_is_refused(self, bad: str) -> None:
        """Empty parts, whitespace and '@' are HZM003."""
        with pytest.raises(MachineError, match="HZM003"):
            keys.asked("hz-1", bad)

    def test_an_unknown_cause_is_refused(self) -> None:
        """A Wake with a cause outside the vocabulary is HZM004."""
        with pytest.raises(MachineError, match="HZM004"):
            Wake("whim", "hz-1@x")


class TestKeyRule:
    def test_an_unseen_key_starts_a_turn(self) -> None:
        """No event speaks for the key: start."""
        assert key_action(Harness.make().journal, "hz-1@x").action == "start"

    def test_a_started_key_without_finish_resumes_its_turn(self) -> None:
        """turn.started and no end: resume that turn."""
        h = Harness.make(decision="wait")
        h.start()
        action = key_action(h.journal, "hz-test@2026-10-30T15:00")
        assert (action.action, action.turn) == ("resume", "t1")

    def test_a_finished_or_skipped_key_does_nothing(self) -> None:
        """turn.finished or turn.skipped make a key final."""
        h = Harness.make()
        h.start()
        skip_turn(h.journal, turn="t2", wakes=[Wake("asked", "hz-test@r1")], reason="cap")
        assert key_action(h.journal, "hz-test@2026-10-30T15:00").action == "none"
        assert key_action(h.journal, "hz-test@r1").action == "none"


class TestCoalesce:
    def test_wakes_due_together_become_one_turn_in_the_spec_order(self) -> None:
        """cause is the first in the spec's order; causes keep all, each key once."""
        wakes = [
            Wake("stale", "hz-1@stale:o:t"),
            Wake("asked", "hz-1@r1"),
            Wake("source-changed", "hz-1@prs:f"),
            Wake("asked", "hz-1@r1"),
            Wake("schedule", "hz-1@slot"),
            Wake("retry", "hz-1@retry:t:r"),
        ]
        plan = coalesce(Harness.make().journal, wakes)
        assert plan.cause == "schedule"
        assert [w.cause for w in plan.start] == [
            "schedule",
            "source-changed",
            "asked",
            "retry",
            "stale",
        ]

    def test_each_key_is_idempotent_on_its_own(self) -> None:
        """A final key drops out, an open one resumes its turn, a new one starts."""
        h = Harness.make(decision="wait")
        h.start()
        skip_turn(h.journal, turn="t2", wakes=[Wake("asked", "hz-test@r1")], reason="cap")
        plan = coalesce(
            h.journal,
            [
                Wake("asked", "hz-test@r1"),
                Wake("schedule", "hz-test@2026-10-30T15:00"),
                Wake("asked", "hz-test@r2"),
            ],
        )
        assert (plan.resume, plan.start) == (("t1",), (Wake("asked", "hz-test@r2"),))

    def test_a_coalesced_turn_records_cause_causes_and_keys(self) -> None:
        """turn.started keeps cause (first) and causes with one key each."""
        h = Harness.make(decision="wait", wait=Wait())
        h.start(wakes=[Wake("asked", "hz-test@r1"), Wake("schedule", "hz-test@s")])
        started = h.journal.events[0]
        assert (started.key, started.data["cause"], started.data["keys"]) == (
            "hz-test@s",
            "schedule",
            ["hz-test@s", "hz-test@r1"],
        )
        assert key_action(h.journal, "hz-test@r1").turn == "t1"
