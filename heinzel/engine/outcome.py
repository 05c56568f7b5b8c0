"""The structured outcome a turn must return, and hz's judgement of it in code.

`Outcome` is the model's output type (ADR 0050 statement 4). Its validators
check what can be checked without the turn; `check_against` checks it against
the turn (the pinned contract version, the outputs, the Done-when items, a due
summary) and its problems go back to the model as a retry. `judge` decides the
disposition: the model asks, hz decides in code.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from heinzel.engine.spec import TurnSpec
from ledger.records import frozen_record

__all__ = [
    "Amendment",
    "Disposition",
    "DoneWhenCheck",
    "Draft",
    "Lesson",
    "Outcome",
    "Summary",
    "WaitFor",
    "check_against",
    "failed",
    "judge",
]

Line = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=300)]
Text = Annotated[str, StringConstraints(min_length=1)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class DoneWhenCheck(_Strict):
    """The model's check of one ``### Done when`` item."""

    item: Line
    met: bool
    note: str = ""


class Draft(_Strict):
    """A draft for one output, with the contract version that made it."""

    text: Text
    output: Line
    contract_version: int = Field(ge=1)
    done_when: list[DoneWhenCheck] = Field(default_factory=list)

    @model_validator(mode="after")
    def _items_unique(self) -> Self:
        items = [check.item for check in self.done_when]
        if len(items) != len(set(items)):
            raise ValueError("each Done-when item is checked once")
        return self


class Lesson(_Strict):
    """One thing learned from the user's edits: a sentence and the diff hunks it comes from."""

    sentence: Line
    hunks: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_line(self) -> Self:
        if "\n" in self.sentence:
            raise ValueError("a lesson is one sentence on one line")
        return self


class Amendment(_Strict):
    """A proposed contract text and why.

    ``asked_in`` names the input that holds the user's message asking for this change
    (``message``, ``message-2``...): hz checks that it is the user's words from the inbox
    and files the amendment as the user's request; without it the amendment is the
    Heinzelmännchen's own, which may not widen the contract (HZC050).
    """

    text: Text
    why: Line
    asked_in: Line | None = None


class Summary(_Strict):
    """The fixed fields of ``summary.written`` (ADR 0049 statement 19).

    ``previous`` is the seq of the summary this one chains (None for the first).
    """

    asset: Line
    wants: Line
    decisions: list[Line] = Field(default_factory=list)
    open_questions: list[Line] = Field(default_factory=list)
    next_deadline: str | None = None
    sources: list[Line] = Field(default_factory=list)
    previous: int | None = None


class WaitFor(_Strict):
    """Hold this outcome's acts until a time (``until``, ISO 8601 with its offset), until an
    input moves (``source``: the input's name), or until the pending draft of an output is
    approved or rejected (``approval``: the output's name); ``until`` with one of the others
    is a wait with a timeout. hz keeps the condition and the tick resumes the turn, which
    then performs the acts (ADR 0049 statement 12)."""

    why: Line
    until: Line | None = None
    source: Line | None = None
    approval: Line | None = None

    @model_validator(mode="after")
    def _one_condition(self) -> Self:
        if self.until is None and self.source is None and self.approval is None:
            raise ValueError("a wait needs until, source or approval")
        if self.source is not None and self.approval is not None:
            raise ValueError("a wait is on one source or one approval, not both")
        if self.until is not None:
            try:
                at = datetime.fromisoformat(self.until.replace("Z", "+00:00"))
            except ValueError:
                raise ValueError(
                    "wait.until is an ISO 8601 time such as 2026-11-02T12:00:00Z"
                ) from None
            if at.tzinfo is None:
                raise ValueError("wait.until needs its offset (Z for UTC)")
        return self


class Outcome(_Strict):
    """What a turn returns: a report line and what hz should do (ADR 0050 statement 4)."""

    report: Line
    draft: Draft | None = None
    lessons: list[Lesson] = Field(default_factory=list)
    amendment: Amendment | None = None
    question: Line | None = None
    summary: Summary | None = None
    nothing_to_do: bool = False
    reason: Line | None = None
    wait: WaitFor | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if "\n" in self.report:
            raise ValueError("report is one line")
        acts = self.draft or self.lessons or self.amendment or self.question
        if self.nothing_to_do:
            if not self.reason:
                raise ValueError("nothing_to_do needs a reason")
            if acts:
                raise ValueError("nothing_to_do carries no draft, lesson, amendment or question")
        else:
            if self.reason:
                raise ValueError("reason belongs to nothing_to_do")
            if not acts and not self.summary:
                raise ValueError(
                    "say what to do: a draft, lessons, an amendment, a question, "
                    "a summary, or nothing_to_do with a reason"
                )
        return self


def check_against(
    outcome: Outcome,
    spec: TurnSpec,
    *,
    summary_due: bool = False,
    previous_summary: int | None = None,
) -> list[str]:
    """The outcome's problems against this turn; each goes back to the model as a retry."""
    problems: list[str] = []
    draft = outcome.draft
    if draft is not None:
        if draft.contract_version != spec.contract_version:
            problems.append(
                f"draft.contract_version must be {spec.contract_version}, "
                f"not {draft.contract_version}"
            )
        if spec.outputs and draft.output not in spec.outputs:
            problems.append(f"draft.output must be one of {list(spec.outputs)}")
        checked = [check.item for check in draft.done_when]
        missing = [item for item in spec.done_when if item not in checked]
        unknown = [item for item in checked if item not in spec.done_when]
        if missing:
            problems.append(f"check every Done-when item; missing: {missing}")
        if unknown:
            problems.append(f"these are not Done-when items of the contract: {unknown}")
    wait = outcome.wait
    if wait is not None:
        names = [i.name for i in spec.inputs]
        if wait.source is not None and wait.source not in names:
            problems.append(f"wait.source must be one of the inputs {names}")
        if wait.approval is not None and spec.outputs and wait.approval not in spec.outputs:
            problems.append(f"wait.approval must be one of the outputs {list(spec.outputs)}")
        if outcome.question is not None:
            problems.append("a question already waits for its answer: drop the wait")
    if summary_due and outcome.summary is None:
        problems.append("this turn must end with a summary (the summary budget is reached)")
    if outcome.summary is not None and outcome.summary.previous != previous_summary:
        problems.append(f"summary.previous must be {previous_summary} (the summary it chains)")
    return problems


@frozen_record
class Disposition:
    """What hz does with an outcome: the turn's disposition and the acts for the act step.

    ``acts`` names what act performs, in order: ``place_draft``, ``record_lesson``,
    ``propose_amendment``, ``ask``, ``write_summary``.
    """

    disposition: Literal["drafted", "asked", "learned", "proposed", "skipped", "failed"]
    reason: str | None = None
    unmet: tuple[str, ...] = ()
    acts: tuple[str, ...] = ()


def judge(outcome: Outcome) -> Disposition:
    """Decide the disposition in code: an unmet Done-when item places nothing."""
    acts: list[str] = []
    unmet: tuple[str, ...] = ()
    if outcome.draft is not None:
        unmet = tuple(c.item for c in outcome.draft.done_when if not c.met)
        if not unmet:
            acts.append("place_draft")
    acts.extend("record_lesson" for _ in outcome.lessons)
    if outcome.amendment is not None:
        acts.append("propose_amendment")
    if outcome.question is not None:
        acts.append("ask")
    if outcome.summary is not None:
        acts.append("write_summary")
    kind: Literal["drafted", "asked", "learned", "proposed", "skipped"]
    reason: str | None = None
    if outcome.draft is not None and unmet:
        kind, reason = "skipped", "done-when-unmet"
    elif outcome.draft is not None:
        kind = "drafted"
    elif outcome.question is not None:
        kind = "asked"
    elif outcome.amendment is not None:
        kind = "proposed"
    elif outcome.lessons:
        kind = "learned"
    else:
        kind, reason = "skipped", "nothing-to-do"
    return Disposition(kind, reason, unmet, tuple(acts))


def failed(error: str) -> Disposition:
    """The disposition of a turn whose outcome never validated (or whose model failed)."""
    return Disposition("failed", error[:300])
