"""Priya's week (ADR 0049's worked example) end to end: one ``hz`` process per moment,
the Friday turn killed twice by ``HZ_CRASH_AT`` and finished by the next ticks.

Each process is forked from the fork server (tests/forkhz.py): what this proves is the
week's timeline, not how a fresh interpreter starts; the same week is played by exec'd
processes in `hz demo` (tests/loop/test_person_lies.py with the venv's `hz`,
tests/e2e/test_installed.py with the installed wheel)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from heinzel.cli.demo import MARK, SHORT, TRIED, Week, expanded
from tests import forkhz


def kinds(lines: list[dict[str, Any]]) -> list[str]:
    return [e["kind"] for e in lines]


@pytest.mark.kill
@pytest.mark.slow
class TestPriyasWeek:
    """The timeline of the worked example, with both crash variants by real kills."""

    def test_the_week(self, tmp_path: Path) -> None:
        """Created, Friday's draft through two kills with one section and no second spend,
        Monday's two lessons, Tuesday's chat yielding her amendment (no hand-written file),
        approved as v2, and the next Friday's v2 draft with both lessons pinned."""
        clean = Week(tmp_path / "clean", crashes=False, run=forkhz.run)
        clean.setup()
        clean.play(until=2)
        week = Week(tmp_path / "home", run=forkhz.run)
        week.setup()
        week.play(until=6)
        created, friday, monday, tuesday, later, wednesday = week.steps

        assert kinds(created.lines) == ["heinzel.created", "contract.proposed", "contract.approved"]

        assert friday.exits == [137, 137, 0]
        assert [e["data"]["woken_by"] for e in friday.lines if e["kind"] == "turn.resumed"] == [
            "recovery",
            "recovery",
        ]
        assert kinds(friday.lines).count("effect.started") == 1
        assert kinds(expanded(friday.lines)).count("draft.placed") == 1
        assert friday.lines[-1]["kind"] == "turn.finished"
        assert friday.lines[-1]["data"]["disposition"] == "drafted"
        [placed] = [e for e in expanded(friday.lines) if e["kind"] == "draft.placed"]
        # approved on Monday: hz removed its own comments, the text stays
        assert week.report().count(f"{MARK}{placed['key']} -->") == 0
        # no second spend: the same model requests as the run that never crashed
        assert kinds(friday.lines).count("model.request") == kinds(clean.steps[1].lines).count(
            "model.request"
        )
        assert friday.usd == clean.steps[1].usd

        lessons = [e for e in monday.lines if e["kind"] == "lesson.recorded"]
        assert len(lessons) == 2
        [observed] = [e for e in monday.lines if e["kind"] == "approval.observed"]
        assert observed["data"]["approver"] == "priya"
        assert 0 < observed["data"]["share_changed"] < 1

        # Tuesday: her chat message yields the amendment, hers and citing her message
        [asked] = [e for e in tuesday.lines if e["kind"] == "turn.started"]
        assert asked["data"]["cause"] == "asked"
        [proposed] = [e for e in tuesday.lines if e["kind"] == "amendment.proposed"]
        request = asked["key"].split("@", 1)[1]
        assert proposed["data"]["by"] == "user" and proposed["data"]["requested_in"] == request
        assert proposed["data"]["widens"] is True
        assert [e["data"]["version"] for e in tuesday.lines if e["kind"] == "contract.amended"] == [
            2
        ]
        assert kinds(expanded(tuesday.lines)).count("draft.placed") == 0

        assert "approval.observed" not in kinds(later.lines)
        [started] = [e for e in later.lines if e["kind"] == "turn.started"]
        assert started["data"]["pins"]["contract_version"] == 2
        assert started["data"]["pins"]["lessons_seq"] >= lessons[-1]["seq"]
        [placed_v2] = [e for e in expanded(later.lines) if e["kind"] == "draft.placed"]
        assert "@v2@2026-11-06T14:00:00.000Z@" in placed_v2["key"]
        assert "### incidents" in week.report()  # v2 reads the on-call channel
        assert [x for x in week.report().splitlines() if x.startswith("🧝 DRAFT")] == [
            "🧝 DRAFT (weekly-report v2): edit, then delete this line to approve"
        ]
        assert week.report().count(MARK) == 1  # the approved section is left clean

        # Wednesday: the daily discovery finds the incidents document once, the offline
        # model proposes reading it instead of the channel, Priya declines, and the next
        # day's discovery wakes nothing for it
        assert wednesday.exits == [0, 0, 0]
        [found] = [e for e in wednesday.lines if e["kind"] == "turn.started"]
        assert found["data"]["cause"] == "discovered"
        assert found["key"].endswith("@discovered:documents.read:file:checkout-incidents.md")
        assert kinds(wednesday.lines)[-3:] == [
            "amendment.filed",
            "turn.finished",  # it carries the finish step's start (docs/spine.md)
            "amendment.declined",
        ]
        [proposed] = [e for e in wednesday.lines if e["kind"] == "amendment.proposed"]
        assert (proposed["data"]["by"], proposed["data"]["widens"]) == ("heinzel", False)

        # Theo's Friday (the flow): his row unapproved at noon, nudged twice, the report
        # proceeds stale and says so, and only the two of them are told
        week.play(start=6)
        theo = week.steps[-1]
        assert theo.exits == [0] * 10
        [fell] = [e for e in theo.lines if e["kind"] == "input.fell_back"]
        assert fell["data"]["input"] == "rows" and fell["data"]["stale_s"] == 28 * 3600 + 5 * 60
        told = [e for e in theo.lines if e["kind"] == "notice.posted"]
        nudged = [e for e in theo.others["my-row"] if e["kind"] == "notice.posted"]
        assert [e["data"]["reason"] for e in told] == ["fell-back"]
        assert [e["data"]["reason"] for e in nudged] == ["needed-by", "needed-by"]
        assert {e["data"]["to"] for e in nudged} == {"theo"}
        assert "### stale" in week.report()
        sessions = list((week.home / "heinzel").glob("hz-*/session.jsonl"))
        assert len(sessions) == 2  # nobody else to tell

        # the Tuesday after (docs/try.md): her amendment tried on her last three Fridays
        # shows each placed draft beside the tried one with its checks, places nothing,
        # starts no turn, and records its requests as usage {kind: trial}
        document, spine = week.report(), (week.home / "heinzel").glob("hz-*/session.jsonl")
        files = {path: path.read_bytes() for path in spine}
        tried = week.moment(*TRIED, week.tried)
        assert tried.exits == [0, 0, 0] and week.report() == document
        [amended, *usages] = tried.lines
        assert amended["kind"] == "amendment.proposed" and usages, kinds(tried.lines)
        assert all(e["kind"] == "usage" and e["data"]["kind"] == "trial" for e in usages)
        assert all(e["turn"] is None for e in usages)
        changed = [path for path, before in files.items() if path.read_bytes() != before]
        assert len(changed) == 1 and changed[0].read_bytes().startswith(files[changed[0]])
        said = tried.said
        assert said.count("\nturn tn-") == 3 and said.count("done-when (placed | tried)") == 3
        assert f"unmet | unmet  {SHORT}" in said and f" met  |  met   {SHORT}" in said
        assert "3 turns tried under v5: 0 better, 0 worse, 3 same" in said
