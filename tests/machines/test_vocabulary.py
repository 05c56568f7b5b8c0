"""The frozen vocabulary: changing any of these lists breaks old spines; a host's
vocabulary whose later version drops a word is refused."""

from __future__ import annotations

from dataclasses import replace

import pytest

from machines import vocabulary as v
from machines.core.table import TABLE
from machines.crashkit.testing import Harness, SimulatedCrash
from machines.errors import MachineError
from machines.host_vocabulary import Vocabulary
from machines.keys import Wake


class TestVocabulary:
    def test_the_event_kinds_are_frozen(self) -> None:
        """The kinds, exactly (additive only: a kind's payload that changes gets a new name)."""
        assert v.VOCABULARY_VERSION == 2
        assert v.KINDS == (
            "turn.started",
            "turn.waiting",
            "turn.resumed",
            "turn.steered",
            "turn.requested",
            "turn.skipped",
            "turn.finished",
            "effect.started",
            "effect.done",
            "effect.failed",
            "draft.placed",
            "question.asked",
            "question.answered",
            "approval.observed",
            "lesson.recorded",
            "lesson.dismissed",
            "context.edit",
            "usage",
            "summary.written",
            "contract.amended",
            "amendment.declined",
            "step.handoff",
            "step.started",
            "model.request",
            "tool.called",
            "tool.result",
            "model.reserved",
            "model.released",
        )

    def test_every_version_past_1_names_what_it_changed(self) -> None:
        """docs/spine.md's policy: each raise of the version lists what an older reader
        misreads; version 2 is the carried fields and the spend an older hz does not count."""
        assert sorted(v.VOCABULARY_CHANGES) == list(range(2, v.VOCABULARY_VERSION + 1))
        assert [c.split(":")[0] for c in v.VOCABULARY_CHANGES[2]] == [
            "steps",
            "done",
            "model.reserved",
            "turn.skipped.usd",
            "usage.kind",
            "step.started.input",
        ]

    def test_the_step_names_are_frozen(self) -> None:
        """gather, think, outcome, act, finish."""
        assert v.STEPS == ("gather", "think", "outcome", "act", "finish")

    def test_dispositions_and_reasons_are_frozen(self) -> None:
        """The lists design.md fixes, plus recovery as a woken_by."""
        assert v.DISPOSITIONS == (
            "drafted",
            "asked",
            "learned",
            "proposed",
            "skipped",
            "failed",
            "abandoned",
        )
        assert v.SKIP_REASONS == (
            "nothing-moved",
            "check-unmet",
            "done-when-unmet",
            "cap",
            "throttled",
        )
        assert v.ABANDON_REASONS == (
            "timeout",
            "max-resumes",
            "stopped",
            "superseded",
            "unanswered",
        )
        assert v.WOKEN_BY == ("timer", "source", "approval", "answer", "asked", "recovery")
        assert v.CAUSES == (
            "schedule",
            "source-changed",
            "discovered",
            "asked",
            "approval",
            "created",
            "retry",
            "stale",
        )

    def test_every_checkpoint_of_the_table_is_in_the_vocabulary(self) -> None:
        """The machine writes no kind the vocabulary lacks."""
        assert {row.checkpoint for row in TABLE} <= set(v.KINDS)


DEPLOY_1 = Vocabulary(
    "deploy", 1, dispositions=("deployed", "rolled-back"), causes=("release", "hotfix")
)


class TestLaterVersions:
    def test_a_version_that_drops_a_disposition_is_refused(self) -> None:
        """Version 2 without ``rolled-back``: HZM080, naming the word."""
        with pytest.raises(MachineError, match="HZM080") as caught:
            Vocabulary("deploy", 2, ("deployed",), ("release", "hotfix"), earlier=DEPLOY_1)
        assert "'rolled-back'" in str(caught.value)

    def test_a_version_that_drops_a_cause_or_an_old_rename_is_refused(self) -> None:
        with pytest.raises(MachineError, match="HZM080"):
            Vocabulary("deploy", 2, DEPLOY_1.dispositions, ("release",), earlier=DEPLOY_1)
        renamed = Vocabulary(
            "deploy",
            2,
            ("shipped", "rolled-back"),
            ("release", "hotfix"),
            renamed={"deployed": "shipped"},
            earlier=DEPLOY_1,
        )
        with pytest.raises(MachineError, match="HZM080"):  # spines still say "deployed"
            Vocabulary("deploy", 3, renamed.dispositions, renamed.causes, earlier=renamed)

    def test_a_version_that_grows_or_renames_is_accepted(self) -> None:
        grown = Vocabulary(
            "deploy", 2, (*DEPLOY_1.dispositions, "paused"), DEPLOY_1.causes, earlier=DEPLOY_1
        )
        renamed = Vocabulary(
            "deploy",
            3,
            ("shipped", "rolled-back", "paused"),
            ("release", "hotfix"),
            renamed={"deployed": "shipped"},
            earlier=grown,
        )
        assert renamed.current("deployed") == "shipped"

    def test_a_later_version_keeps_its_name_and_raises_its_number(self) -> None:
        with pytest.raises(MachineError, match="HZM080"):
            Vocabulary(
                "deploy", 1, (*DEPLOY_1.dispositions, "x"), DEPLOY_1.causes, earlier=DEPLOY_1
            )
        with pytest.raises(MachineError, match="HZM080"):
            Vocabulary("ship", 2, DEPLOY_1.dispositions, DEPLOY_1.causes, earlier=DEPLOY_1)

    def test_a_turn_is_not_resumed_under_an_older_version(self) -> None:
        """A turn pinned to version 2 (which listed ``paused``), resumed by a host back
        on version 1: HZM081, nothing appended."""
        grown = Vocabulary("deploy", 2, (*DEPLOY_1.dispositions, "paused"), DEPLOY_1.causes)
        h = Harness.make()
        h.settings = replace(h.settings, vocabulary=grown)
        h.crash_after = 3
        with pytest.raises(SimulatedCrash):
            h.start(wakes=[Wake("release", "bot@release:v2", grown)])
        h.settings = replace(h.settings, vocabulary=DEPLOY_1)
        before = len(h.journal.events)
        with pytest.raises(MachineError, match="HZM081"):
            h.resume()
        assert len(h.journal.events) == before
