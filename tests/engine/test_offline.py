"""The offline model: drafts, Done-when checks, lessons and contracts, all by rule."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from decimal import Decimal

from heinzel.engine import (
    Budget,
    InputSpec,
    Pricing,
    SpineRecord,
    SpineView,
    ThinkResult,
    TurnSpec,
    build_context,
    offline_model,
    think,
)
from heinzel.engine.offline import NOT_AI, draft_items
from heinzel.engine.offline_create import fill_contract, parse_schedule
from heinzel.engine.testing import MemoryRecorder
from ledger.errors import HzError

SENTENCE = (
    "every Friday at three, draft this week's section of our report from the merged PRs; I approve"
)


def run_offline(turn: TurnSpec, **kwargs: object) -> tuple[ThinkResult, MemoryRecorder]:
    recorder = MemoryRecorder()
    budget = Budget(Pricing(at=turn.started_at), Decimal("0.5"))
    context = build_context(turn, SpineView())
    result = asyncio.run(
        think(turn, context, model=offline_model(), recorder=recorder, budget=budget, **kwargs)
    )  # type: ignore[arg-type]
    return result, recorder


class TestDrafting:
    def test_a_draft_from_three_inputs(self, spec: Callable[..., TurnSpec]) -> None:
        """One section per input, one bullet per item, every item met, and it says it's not AI."""
        result, _ = run_offline(spec())
        assert result.status == "outcome" and result.outcome and result.outcome.draft
        assert result.disposition.disposition == "drafted"
        assert "- Fix the checkout bug" in result.outcome.draft.text
        assert "### events" in result.outcome.draft.text
        assert result.outcome.report.startswith(NOT_AI)
        assert [c.met for c in result.outcome.draft.done_when] == [True]

    def test_it_calls_last_approved_and_report(self, spec: Callable[..., TurnSpec]) -> None:
        """Two tool calls (carried by the second request's line), one report entry, two requests."""
        result, recorder = run_offline(spec())
        assert [k for k, _ in recorder.lines] == ["step.model", "step.model"]
        tools = [(t["tool"], t["id"]) for t in recorder.lines[1][1]["tools"]]
        assert tools == [("last_approved", "o0-0"), ("report", "o0-1")]
        assert [r.verb for r in result.reports] == ["read"]

    def test_an_empty_input_leaves_an_item_unmet(self, spec: Callable[..., TurnSpec]) -> None:
        """No merged PRs: the Done-when item naming them is unmet, so the turn is skipped."""
        turn = spec(inputs=(InputSpec("merged_prs", "[]"), InputSpec("issues", "- CHK-1")))
        result, _ = run_offline(turn)
        assert (result.disposition.disposition, result.disposition.reason) == (
            "skipped",
            "done-when-unmet",
        )

    def test_no_items_at_all_is_nothing_to_do(self, spec: Callable[..., TurnSpec]) -> None:
        """Every input empty: nothing to do, with the reason."""
        result, _ = run_offline(spec(inputs=(InputSpec("merged_prs", "[]"),), done_when=()))
        assert result.outcome is not None and result.outcome.nothing_to_do

    def test_items_from_json_and_lines(self) -> None:
        """JSON lists give titles; text gives its lines without bullets or headings."""
        assert draft_items('[{"title": "a"}, "b", {"x": 1}]') == ["a", "b", '{"x": 1}']
        assert draft_items("# head\n- one\n* two\n\n") == ["one", "two"]

    def test_json_lines_are_described_like_a_reader_would(self) -> None:
        """Staged records (JSON lines) become a title with what identifies them."""
        staged = (
            '{"author": "Aylin Demir", "number": 402, "title": "One-tap button"}\n'
            '{"key": "CHK-215", "status": "In review", "title": "Address autofill"}\n'
        )
        assert draft_items(staged) == [
            "One-tap button (#402, Aylin Demir)",
            "Address autofill (CHK-215, In review)",
        ]


class TestApproval:
    def test_lessons_from_the_diff(self, spec: Callable[..., TurnSpec]) -> None:
        """Moved headings and a removed line become lessons with their hunks."""
        drafted = "## Summary\n- all good\n## Risks\n- none\n- see CHK-1, CHK-2"
        approved = "## Risks\n- none\n## Summary\n- all good"
        turn = spec(
            cause="approval",
            done_when=(),
            inputs=(InputSpec("draft", drafted), InputSpec("approved", approved)),
        )
        result, _ = run_offline(turn)
        assert result.disposition.disposition == "learned" and result.outcome
        sentences = [lesson.sentence for lesson in result.outcome.lessons]
        assert sentences == ["Risks goes above Summary", "leave out lines like: - see CHK-1, CHK-2"]
        assert all(lesson.hunks for lesson in result.outcome.lessons)

    def test_approved_as_drafted_learns_nothing(self, spec: Callable[..., TurnSpec]) -> None:
        """The same text approved: nothing to do."""
        turn = spec(
            cause="approval",
            done_when=(),
            inputs=(InputSpec("draft", "- a"), InputSpec("approved", "- a")),
        )
        result, _ = run_offline(turn)
        assert result.outcome is not None and result.outcome.reason == "approved as drafted"


class TestCreated:
    def test_the_schedule_from_the_sentence(self) -> None:
        """Friday at three is 15:00 on Fridays; 9am daily; a named time wins."""
        assert parse_schedule(SENTENCE)[0] == "0 15 * * FRI"
        assert parse_schedule("every day at 9am, summarise")[0] == "0 9 * * *"
        assert parse_schedule("every Monday at 10:30 please")[0] == "30 10 * * MON"
        assert parse_schedule("once in a while")[0] is None

    def test_the_contract_from_the_sentence(self) -> None:
        """The filled contract has the schedule, the code-host input, the section and approvers."""
        text = fill_contract(SENTENCE).text
        for line in (
            'schedule: "0 15 * * FRI"',
            "merged_prs: {from: code-host.merged_pull_requests, args: {repo: your-org/your-repo}, "
            "window: 7d}",
            "section: {",
            "approvers: [owner]",
            "name: weekly-report",
        ):
            assert line in text

    def test_a_created_turn_proposes_the_contract(self, spec: Callable[..., TurnSpec]) -> None:
        """The created turn's outcome is an amendment saying the template was filled by rule."""
        turn = spec(cause="created", done_when=(), inputs=(InputSpec("sentence", SENTENCE),))
        result, _ = run_offline(turn)
        assert result.disposition.disposition == "proposed" and result.outcome
        assert result.outcome.amendment is not None
        assert "filled the template 'section' by rule" in result.outcome.amendment.why

    def test_a_compile_error_is_a_bounded_retry(self, spec: Callable[..., TurnSpec]) -> None:
        """A compile error goes back as a retry and the next template is tried."""
        seen: list[str] = []

        def compile_contract(text: str) -> object:
            seen.append(text)
            if len(seen) == 1:
                raise HzError("HZC001", "line 3: bad schedule", "fix it")
            return text

        turn = spec(cause="created", done_when=(), inputs=(InputSpec("sentence", SENTENCE),))
        result, _ = run_offline(turn, compile_contract=compile_contract)
        assert result.status == "outcome" and result.outcome and result.outcome.amendment
        assert "'digest'" in result.outcome.amendment.why and len(seen) == 2

    def test_a_contract_that_never_compiles_fails(self, spec: Callable[..., TurnSpec]) -> None:
        """After the bounded retries the turn fails with the compile error in its report."""

        def never(text: str) -> object:
            raise HzError("HZC001", "line 3: bad schedule", "fix it")

        turn = spec(cause="created", done_when=(), inputs=(InputSpec("sentence", SENTENCE),))
        result, _ = run_offline(turn, compile_contract=never)
        assert result.status == "failed" and result.disposition.disposition == "failed"
        assert "HZC001" in (result.error or "")


class TestSummaryTurn:
    def test_a_due_summary_is_written_and_chains(self, spec: Callable[..., TurnSpec]) -> None:
        """Past the turn budget the offline outcome carries a summary naming the previous one."""
        records = [SpineRecord(1, None, "summary.written", {"asset": "doc", "wants": "w"})]
        for i in range(21):
            records.append(SpineRecord(2 + i, f"T{i}", "turn.started", {"cause": "schedule"}))
        turn = spec()
        context = build_context(turn, SpineView(tuple(records)))
        recorder = MemoryRecorder()
        result = asyncio.run(
            think(
                turn,
                context,
                model=offline_model(),
                recorder=recorder,
                budget=Budget(Pricing(at=turn.started_at), Decimal("0.5")),
            )
        )
        assert context.summary_due and result.outcome and result.outcome.summary
        assert result.outcome.summary.previous == 1
        assert "write_summary" in result.disposition.acts
