"""The frozen vocabulary: changing any of these lists breaks old spines."""

from __future__ import annotations

from machines import vocabulary as v
from machines.table import TABLE


class TestVocabulary:
    def test_the_event_kinds_are_frozen(self) -> None:
        """Version 1's kinds, exactly (additive only: a new kind bumps the version)."""
        assert v.VOCABULARY_VERSION == 1
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
