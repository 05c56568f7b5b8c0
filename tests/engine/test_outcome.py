"""The Outcome model's validators, its check against the turn, and judge()."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pydantic import ValidationError

from heinzel.engine import Outcome, TurnSpec, check_against, judge

DONE = "every item of `merged_prs` is covered"


def draft(met: bool = True, **changes: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "text": "## section\n- a\n",
        "output": "section",
        "contract_version": 1,
        "done_when": [{"item": DONE, "met": met, "note": ""}],
    }
    fields.update(changes)
    return fields


class TestOutcomeModel:
    def test_nothing_to_do_needs_a_reason(self) -> None:
        """nothing_to_do without a reason is refused."""
        with pytest.raises(ValidationError, match="needs a reason"):
            Outcome(report="idle", nothing_to_do=True)

    def test_an_empty_outcome_is_refused(self) -> None:
        """An outcome that asks for nothing and is not nothing_to_do is refused."""
        with pytest.raises(ValidationError, match="say what to do"):
            Outcome(report="hm")

    def test_nothing_to_do_carries_no_draft(self) -> None:
        """nothing_to_do and a draft together are refused."""
        with pytest.raises(ValidationError, match="carries no draft"):
            Outcome.model_validate(
                {"report": "x", "nothing_to_do": True, "reason": "r", "draft": draft()}
            )

    def test_report_is_one_line(self) -> None:
        """A report with a newline is refused."""
        with pytest.raises(ValidationError, match="one line"):
            Outcome.model_validate({"report": "a\nb", "question": "q?"})

    def test_done_when_items_are_checked_once(self) -> None:
        """The same Done-when item twice is refused."""
        twice = draft(done_when=[{"item": DONE, "met": True}, {"item": DONE, "met": False}])
        with pytest.raises(ValidationError, match="checked once"):
            Outcome.model_validate({"report": "r", "draft": twice})

    def test_unknown_fields_are_refused(self) -> None:
        """The outcome is a closed schema."""
        with pytest.raises(ValidationError):
            Outcome.model_validate({"report": "r", "question": "q?", "place_draft": True})

    def test_a_summary_alone_is_an_outcome(self) -> None:
        """A summary with nothing else is a valid outcome."""
        summary = {"asset": "doc", "wants": "a report", "sources": ["prs"]}
        assert Outcome.model_validate({"report": "r", "summary": summary}).summary is not None


class TestCheckAgainst:
    def test_a_matching_draft_has_no_problems(self, spec: Callable[..., TurnSpec]) -> None:
        """A draft at the pinned version, for a declared output, checking every item, passes."""
        outcome = Outcome.model_validate({"report": "r", "draft": draft()})
        assert check_against(outcome, spec()) == []

    def test_wrong_version_output_and_items(self, spec: Callable[..., TurnSpec]) -> None:
        """A draft at another version, for an unknown output, with a missing item, has three."""
        bad = draft(contract_version=2, output="other", done_when=[{"item": "x", "met": True}])
        problems = check_against(Outcome.model_validate({"report": "r", "draft": bad}), spec())
        assert len(problems) == 4
        assert "contract_version must be 1" in problems[0]

    def test_a_due_summary_is_required(self, spec: Callable[..., TurnSpec]) -> None:
        """When the summary budget is reached, an outcome without a summary has a problem."""
        outcome = Outcome.model_validate({"report": "r", "question": "q?"})
        assert check_against(outcome, spec(), summary_due=True) == [
            "this turn must end with a summary (the summary budget is reached)"
        ]

    def test_a_summary_chains_the_previous(self, spec: Callable[..., TurnSpec]) -> None:
        """A summary that names the wrong previous summary has a problem."""
        summary = {"asset": "doc", "wants": "w", "previous": 3}
        outcome = Outcome.model_validate({"report": "r", "summary": summary})
        assert check_against(outcome, spec(), previous_summary=7) != []
        assert check_against(outcome, spec(), previous_summary=3) == []


class TestJudge:
    def test_a_met_draft_is_drafted_and_placed(self) -> None:
        """Every item met: drafted, and act places the draft."""
        verdict = judge(Outcome.model_validate({"report": "r", "draft": draft()}))
        assert (verdict.disposition, verdict.acts) == ("drafted", ("place_draft",))

    def test_an_unmet_item_skips_and_places_nothing(self) -> None:
        """An unmet item: skipped with done-when-unmet, the item named, nothing placed."""
        outcome = Outcome.model_validate(
            {"report": "r", "draft": draft(met=False), "lessons": [{"sentence": "s"}]}
        )
        verdict = judge(outcome)
        assert (verdict.disposition, verdict.reason, verdict.unmet) == (
            "skipped",
            "done-when-unmet",
            (DONE,),
        )
        assert "place_draft" not in verdict.acts

    @pytest.mark.parametrize(
        ("fields", "expected"),
        [
            ({"question": "which repo?"}, "asked"),
            ({"amendment": {"text": "---\n", "why": "a new source"}}, "proposed"),
            ({"lessons": [{"sentence": "risks go first", "hunks": ["@@"]}]}, "learned"),
            ({"nothing_to_do": True, "reason": "quiet week"}, "skipped"),
        ],
    )
    def test_dispositions(self, fields: dict[str, Any], expected: str) -> None:
        """Each kind of outcome gets its disposition."""
        assert judge(Outcome.model_validate({"report": "r", **fields})).disposition == expected

    def test_acts_follow_the_outcome(self) -> None:
        """Lessons, an amendment, a question and a summary each become an act, in order."""
        outcome = Outcome.model_validate(
            {
                "report": "r",
                "lessons": [{"sentence": "a"}, {"sentence": "b"}],
                "amendment": {"text": "t", "why": "w"},
                "question": "q?",
                "summary": {"asset": "a", "wants": "w"},
            }
        )
        assert judge(outcome).acts == (
            "record_lesson",
            "record_lesson",
            "propose_amendment",
            "ask",
            "write_summary",
        )
