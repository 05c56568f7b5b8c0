"""`hz heinzel try`: the last turns thought again under a pending amendment, against the
loopback OpenAI server that bills each request its worst case (tests/models/test_caps.py)
and with the offline model. A trial places nothing and starts no turn: the document and
the spine's turns keep their bytes, and its only lines are ``usage {kind: trial}``, one a
request, matching what the provider billed; a trial over its cap stops at the cap; a
killed trial leaves no open turn and no placed draft; an expired body is named."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import threading
from decimal import Decimal
from typing import Any

from heinzel.session.spend import spent_on_spines
from heinzel.store.home import Home
from ledger.spine import read_events
from tests import forkhz

from .conftest import (
    CONTRACT,
    DONE,
    DRAFT,
    FRIDAY,
    User,
    answered_a_tool,
    outcome_after_report,
)
from .fake_providers import Call, Http, Outcome
from .test_caps import Meter, W, _create, _meter
from .test_caps import buyer as buyer_of_test_caps

buyer = buyer_of_test_caps
"""The user of the OpenAI API whose model costs 1 USD per million output tokens."""

SHORT = "the section has at most 1 lines"
AMENDED = CONTRACT.replace(f"- [ ] {DONE}\n", f"- [ ] {DONE}\n- [ ] {SHORT}\n")
TRIED = {
    "report": "drafted the digest, shorter",
    "draft": {
        "text": "- ship the rounding fix\n",
        "output": "section",
        "contract_version": 2,
        "done_when": [
            {"item": DONE, "met": True, "note": "the note"},
            {"item": SHORT, "met": True, "note": "one line"},
        ],
    },
}


def _spine(user: User) -> bytes:
    [path] = sorted((user.home / "heinzel").glob("hz-*/session.jsonl"))
    return path.read_bytes()


def _added(user: User, before: bytes) -> list[Any]:
    [path] = sorted((user.home / "heinzel").glob("hz-*/session.jsonl"))
    return [e for e in read_events(path) if e.seq > before.count(b"\n")]


def _placed_and_amended(user: User, answers: list[Any]) -> Meter:
    """notes-digest approved, one Friday's draft placed, and the amendment that asks for
    a one-line section pending; the provider answers ``answers[0]`` (the test swaps it)."""
    _create(user)
    meter = _meter(user, lambda body, n: answers[0](body, n))
    woke = user.hz("heinzel", "wake", "notes-digest", "--json")
    assert json.loads(woke.stdout)["disposition"] == "drafted", woke.stdout + woke.stderr
    (user.folder / "v2.prose.md").write_text(AMENDED, encoding="utf-8")
    amended = user.hz("heinzel", "amend", "notes-digest", "--from", "v2.prose.md")
    assert amended.returncode == 0, amended.stderr
    return meter


class TestATrial:
    def test_it_places_nothing_starts_no_turn_and_records_what_the_provider_billed(
        self, buyer: User
    ) -> None:
        answers: list[Any] = [lambda body, n: Outcome(DRAFT)]
        meter = _placed_and_amended(buyer, answers)
        answers[0] = outcome_after_report(TRIED)
        document, spine = (buyer.folder / "report.md").read_bytes(), _spine(buyer)
        drafts = buyer.hz("drafts", "--json").stdout
        sent = len(meter.seen)
        tried = buyer.hz("heinzel", "try", "notes-digest", "--json")
        assert tried.returncode == 0, tried.stderr
        data = json.loads(tried.stdout)
        assert (buyer.folder / "report.md").read_bytes() == document
        assert _spine(buyer).startswith(spine)  # the turns' lines keep their bytes
        added = _added(buyer, spine)
        kinds = ["model.reserved", "usage"] * 2  # a report call, then the outcome
        assert [e.kind for e in added] == kinds, data
        assert all(e.turn is None and e.data["kind"] == "trial" for e in added)
        assert len({e.data["trial"] for e in added}) == 1  # one trial's lines
        used = [e for e in added if e.kind == "usage"]
        assert len(used) == len(meter.seen) - sent == 2
        assert sum(Decimal(str(e.data["usd"])) for e in used) == 2 * W
        assert buyer.hz("drafts", "--json").stdout == drafts
        [turn] = data["turns"]
        assert data["version"] == 2 and turn["verdict"] == "better", data["summary"]
        placed = {c["item"]: c["met"] for c in turn["placed_checks"]}
        after = {c["item"]: c["met"] for c in turn["tried_checks"]}
        assert placed[SHORT] is False and after[SHORT] is True
        assert "-## Digest" in turn["diff"] and "+++ tried (v2)" in turn["diff"]
        assert "place the draft in section" in turn["would"]
        assert Decimal(str(turn["tried_usd"])) == 2 * W and turn["placed_usd"] > 0
        assert data["summary"].startswith("1 turn tried under v2: 1 better, 0 worse, 0 same")
        text = buyer.hz("heinzel", "try", "notes-digest").stdout
        assert "unmet |  met   " + SHORT in text and "@@" in text, text
        shown = json.loads(buyer.hz("heinzel", "show", "notes-digest", "--json").stdout)
        assert Decimal(str(shown["cost_month"]["by_cause"]["trial"])) == 4 * W

    def test_over_its_cap_it_stops_at_the_cap(self, buyer: User) -> None:
        """A trial allowed one and a half requests sends one: the second is refused
        before it is sent, the turn is listed as stopped at the cap."""
        answers: list[Any] = [lambda body, n: Outcome(DRAFT)]
        meter = _placed_and_amended(buyer, answers)
        answers[0] = outcome_after_report(TRIED)
        spine, sent = _spine(buyer), len(meter.seen)
        cap = W * Decimal("1.5")
        tried = buyer.hz("heinzel", "try", "notes-digest", "--max-usd", str(cap), "--json")
        assert tried.returncode == 0, tried.stderr
        [turn] = json.loads(tried.stdout)["turns"]
        assert turn["status"] == "cap" and turn["verdict"] == "not tried", turn
        added = _added(buyer, spine)
        assert [e.kind for e in added] == ["model.reserved", "usage"]
        assert len(meter.seen) - sent == 1
        assert Decimal(str(added[1].data["usd"])) == W <= cap

    def test_a_killed_trial_leaves_no_open_turn_and_no_draft_and_its_request_counts(
        self, buyer: User
    ) -> None:
        """Killed while the provider holds its request, a trial leaves its reservation on
        the spine and nothing else: no turn, no draft. The caps count what the provider
        took (the day cap holds the wake's request and the trial's), and the next trial,
        over the cap, is refused before it sends anything."""
        answers: list[Any] = [lambda body, n: Outcome(DRAFT)]
        meter = _placed_and_amended(buyer, answers)
        answers[0] = lambda body, n: Outcome(TRIED)
        buyer.env["HZ_MAX_USD_PER_DAY"] = str(W * Decimal("2.5"))  # the wake's W, and 1.5 W
        gate, arrived = threading.Event(), threading.Event()
        meter.gate, meter.arrived = gate, [threading.Event()] * len(meter.seen) + [arrived]
        document, spine = (buyer.folder / "report.md").read_bytes(), _spine(buyer)
        before = json.loads(buyer.hz("heinzel", "show", "notes-digest", "--json").stdout)
        trial = forkhz.Popen(
            [os.path.join(os.path.dirname(forkhz.HZ), "hz"), "heinzel", "try", "notes-digest"],
            cwd=buyer.folder,
            env=buyer.env,
            stdout=forkhz.subprocess.PIPE,
            stderr=forkhz.subprocess.PIPE,
            text=True,
        )
        try:
            assert arrived.wait(120), "the trial's request never reached the provider"
            trial.send_signal(signal.SIGKILL)
            trial.communicate(timeout=120)
        finally:
            gate.set()
        took = len(meter.seen) * W  # the meter bills each request it received W
        assert (buyer.folder / "report.md").read_bytes() == document
        assert _spine(buyer).startswith(spine)
        [reserved] = _added(buyer, spine)  # killed in its request: its reservation only
        assert reserved.kind == "model.reserved" and reserved.turn is None
        assert reserved.data["kind"] == "trial" and Decimal(str(reserved.data["usd"])) == W
        after = json.loads(buyer.hz("heinzel", "show", "notes-digest", "--json").stdout)
        assert after["turns"] == before["turns"] and after["drafts"] == before["drafts"]
        assert Decimal(str(after["spend_today"]["usd"])) == took == 2 * W, after
        assert Decimal(str(after["cost_month"]["by_cause"]["trial"])) == W
        assert Decimal(str(spent_on_spines(Home(buyer.home), FRIDAY[:10]))) == took
        sent, spine = len(meter.seen), _spine(buyer)
        again = buyer.hz("heinzel", "try", "notes-digest", "--json")
        assert again.returncode == 0, again.stderr
        [turn] = json.loads(again.stdout)["turns"]
        assert turn["status"] == "cap" and turn["verdict"] == "not tried", turn
        assert len(meter.seen) == sent and _spine(buyer) == spine  # nothing sent or written
        answers[0] = lambda body, n: Outcome(DRAFT)
        del buyer.env["HZ_MAX_USD_PER_DAY"]
        woke = buyer.hz("heinzel", "wake", "notes-digest", "--json")  # the spine is free
        assert woke.returncode == 0, woke.stderr


class TestARefusedTrialRequest:
    def test_an_http_error_lets_its_reservation_go(self, buyer: User) -> None:
        """The provider refuses the trial's request (HTTP 400: no bill): its reservation
        is released, and the day's spend is the wake's alone."""
        answers: list[Any] = [lambda body, n: Outcome(DRAFT)]
        _placed_and_amended(buyer, answers)
        answers[0] = lambda body, n: Http(400)
        spine = _spine(buyer)
        tried = buyer.hz("heinzel", "try", "notes-digest", "--json")
        assert tried.returncode == 0, tried.stderr
        [turn] = json.loads(tried.stdout)["turns"]
        assert turn["status"] == "failed" and turn["tried_usd"] == 0, turn
        added = _added(buyer, spine)
        assert [e.kind for e in added] == ["model.reserved", "model.released"]
        shown = _show_cost(buyer)
        assert Decimal(str(shown["spend_today"]["usd"])) == W, shown["spend_today"]
        assert "trial" not in shown["cost_month"]["by_cause"]
        assert Decimal(str(spent_on_spines(Home(buyer.home), FRIDAY[:10]))) == W


class TestTrialSpendInTheIndex:
    def test_show_reads_it_from_the_index_and_an_older_index_gets_it_on_open(
        self, buyer: User
    ) -> None:
        """`show` counts a trial's spend from the index's ``trials`` rows (the spine's
        trial lines are not read for it); an index made before that table (dropped
        here) gets its rows from the lines it had folded when it is next opened, and
        the day's spend is not counted twice."""
        answers: list[Any] = [lambda body, n: Outcome(DRAFT)]
        _placed_and_amended(buyer, answers)
        answers[0] = outcome_after_report(TRIED)
        tried = buyer.hz("heinzel", "try", "notes-digest", "--json")
        assert tried.returncode == 0, tried.stderr
        shown = _show_cost(buyer)
        assert Decimal(str(shown["cost_month"]["by_cause"]["trial"])) == 2 * W
        index = sqlite3.connect(Home(buyer.home).index_path)
        with index:
            rows = index.execute("SELECT state, usd, reserved FROM trials").fetchall()
            assert rows == [("settled", float(W), float(W))] * 2
            index.execute("DROP TABLE trials")  # as an index made before it
        index.close()
        again = _show_cost(buyer)
        assert again["cost_month"] == shown["cost_month"], again["cost_month"]
        assert (
            again["spend_today"] == shown["spend_today"]
            and again["cost_today"] == shown["cost_today"]
        )


def _show_cost(user: User) -> dict[str, Any]:
    shown = user.hz("heinzel", "show", "notes-digest", "--json")
    assert shown.returncode == 0, shown.stderr
    return dict(json.loads(shown.stdout))


NOTHING = {"report": "nothing to learn", "nothing_to_do": True, "reason": "no edits"}


def _asks_last_approved(outcome: dict[str, Any]) -> Any:
    def script(body: dict[str, Any], n: int) -> Any:
        return Outcome(outcome) if answered_a_tool(body) else Call("last_approved", {})

    return script


class TestToolsFromTheRecord:
    def test_last_approved_answers_what_it_answered_the_old_turn(self, buyer: User) -> None:
        """The Friday turn asked for the last approved text before anything was approved;
        the draft is approved since. Tried again, the tool answers as it did on Friday."""
        answers: list[Any] = [_asks_last_approved(DRAFT)]
        meter = _placed_and_amended(buyer, answers)
        [draft] = json.loads(buyer.hz("drafts", "--json").stdout)
        approved = buyer.hz("approve", draft["key"])
        assert approved.returncode == 0, approved.stderr
        answers[0] = lambda body, n: Outcome(NOTHING)  # the approval turn learns nothing
        ticked = buyer.hz("system", "daemon", "tick")
        assert ticked.returncode == 0, ticked.stderr
        shown = json.loads(buyer.hz("heinzel", "show", "notes-digest", "--json").stdout)
        assert [d["state"] for d in shown["drafts"]] == ["approved"], shown["drafts"]
        answers[0] = _asks_last_approved(TRIED)
        sent = len(meter.seen)
        tried = buyer.hz("heinzel", "try", "notes-digest", "--json")
        assert tried.returncode == 0, tried.stderr
        [turn] = json.loads(tried.stdout)["turns"]
        assert turn["status"] == "outcome", turn
        said = [
            m["content"]
            for seen in meter.seen[sent:]
            for m in seen.body["messages"]
            if m.get("role") == "tool"
        ]
        assert said == ["(none yet)"], said


SEARCHED = CONTRACT.replace(
    "requires: [files:read, documents:write]",
    "requires: [files:read, documents:write, calendar:read]",
).replace(
    "    notes: {from: files.read, args: {path: notes.txt}}\n",
    "    notes: {from: files.read, args: {path: notes.txt}}\n"
    "    events: {from: calendar.events, args: {calendar: me}, window: 7d}\n",
)
EVENT = '{"id": "e1", "calendar": "me", "title": "%s retro", "start": "2026-10-28T10:00:00Z"}\n'
RECORDED = {"method": "events", "window": "7d", "args": {"query": "retro"}}
CACHED = {"method": "events", "window": "7d", "args": {"calendar": "me"}}
NEVER = {"method": "events", "window": "14d"}


def _searches(calls: list[dict[str, Any]], outcome: dict[str, Any]) -> Any:
    """Call ``search_calendar`` with each of ``calls`` in turn, then give ``outcome``."""

    def script(body: dict[str, Any], n: int) -> Any:
        done = sum(1 for m in body["messages"] if m.get("role") == "tool")
        return Call("search_calendar", calls[done]) if done < len(calls) else Outcome(outcome)

    return script


class TestSearchesInATrial:
    def test_from_the_record_the_cache_or_unavailable_and_live_with_live(self, buyer: User) -> None:
        """The Friday turn searched the calendar for "retro"; the calendar changed since
        (its event is now "LIVE retro"). Tried again, the same search answers what it
        answered on Friday, a search it never made answers from the source cache (the
        input the wake fetched), one neither holds is unavailable, and nothing is fetched;
        with --live each is fetched now."""
        sources = buyer.folder / "sources"
        sources.mkdir()
        (sources / "calendar.jsonl").write_text(EVENT % "Sprint", encoding="utf-8")
        buyer.env["HZ_FIXTURE_SOURCES"] = str(sources)
        path = buyer.folder / "notes-digest.prose.md"
        path.write_text(SEARCHED, encoding="utf-8")
        assert buyer.in_process("heinzel", "new", "--from", str(path)).returncode == 0
        assert buyer.in_process("approve", "notes-digest").returncode == 0
        answers: list[Any] = [_searches([RECORDED], DRAFT)]
        meter = _meter(buyer, lambda body, n: answers[0](body, n))
        woke = buyer.hz("heinzel", "wake", "notes-digest", "--json")
        assert json.loads(woke.stdout)["disposition"] == "drafted", woke.stdout + woke.stderr
        (sources / "calendar.jsonl").write_text(EVENT % "LIVE", encoding="utf-8")
        answers[0] = _searches([RECORDED, CACHED, NEVER], DRAFT)
        told = []
        for extra in ([], ["--live"]):
            sent = len(meter.seen)
            tried = buyer.hz("heinzel", "try", "notes-digest", "--json", *extra)
            assert tried.returncode == 0, tried.stderr
            [turn] = json.loads(tried.stdout)["turns"]
            assert turn["status"] == "outcome", turn
            told.append(
                (
                    [call["answered"] for call in turn["tools"]],
                    [
                        m["content"]
                        for m in meter.seen[-1].body["messages"]
                        if m.get("role") == "tool"
                    ],
                )
            )
            assert len(meter.seen) - sent == 4
        (kept, said), (live, fetched) = told
        assert kept == ["record", "cache", "unavailable"], told
        assert "Sprint retro" in said[0] and "Sprint retro" in said[1], said
        assert "LIVE" not in "".join(said) and said[2].startswith("unavailable"), said
        assert live == ["live"] * 3 and all("LIVE retro" in one for one in fetched), fetched
        text = buyer.hz("heinzel", "try", "notes-digest").stdout
        assert "tool: search_calendar(events, 7d): answered from the record" in text, text


LESSON = "Put the rounding fix first."


class TestALessonLeftOut:
    def test_without_lesson_the_tried_turn_never_sees_it(self, buyer: User) -> None:
        """The approval turn learned one lesson; tried with it, the model is told it, tried
        --without-lesson SEQ, not (its number from `hz heinzel lessons`)."""
        answers: list[Any] = [lambda body, n: Outcome(DRAFT)]
        meter = _placed_and_amended(buyer, answers)
        [draft] = json.loads(buyer.hz("drafts", "--json").stdout)
        assert buyer.hz("approve", draft["key"]).returncode == 0
        learned = {"report": "learned", "lessons": [{"sentence": LESSON}]}
        answers[0] = lambda body, n: Outcome(learned)
        assert buyer.hz("system", "daemon", "tick").returncode == 0
        listed = json.loads(buyer.hz("heinzel", "lessons", "notes-digest", "--json").stdout)
        [lesson] = [one for one in listed if one["sentence"] == LESSON]
        answers[0] = lambda body, n: Outcome(TRIED)
        told = []
        for extra in ([], ["--without-lesson", str(lesson["seq"])]):
            sent = len(meter.seen)
            tried = buyer.hz("heinzel", "try", "notes-digest", "--json", *extra)
            assert tried.returncode == 0, tried.stderr
            told.append(any(LESSON in json.dumps(s.body) for s in meter.seen[sent:]))
        assert told == [True, False]


class TestWhatATrialCannotTry:
    def test_an_expired_body_is_named_not_skipped(self, buyer: User) -> None:
        answers: list[Any] = [lambda body, n: Outcome(DRAFT)]
        meter = _placed_and_amended(buyer, answers)
        later = {"HZ_NOW": "2027-03-01T10:00:00.000Z", "HZ_RETENTION_DAYS": "30"}
        pruned = buyer.hz("heinzel", "prune", **later)
        assert pruned.returncode == 0, pruned.stderr
        sent = len(meter.seen)
        tried = buyer.hz("heinzel", "try", "notes-digest", "--json", **later)
        assert tried.returncode == 0, tried.stderr
        data = json.loads(tried.stdout)
        [gone] = data["expired"]
        assert gone["at"].startswith(FRIDAY[:10]) and gone["expired"].startswith("2026-11-29")
        assert data["turns"] == [] and len(meter.seen) == sent
        text = buyer.hz("heinzel", "try", "notes-digest", **later).stdout
        assert "not replayable (expired 2026-11-29)" in text and "1 expired" in text, text

    def test_the_offline_model_tries_it_for_free(self, buyer: User) -> None:
        answers: list[Any] = [lambda body, n: Outcome(DRAFT)]
        meter = _placed_and_amended(buyer, answers)
        spine, sent = _spine(buyer), len(meter.seen)
        del buyer.env["OPENAI_API_KEY"]  # the configured model's key is not needed
        tried = buyer.hz("heinzel", "try", "notes-digest", "--model", "offline", "--json")
        assert tried.returncode == 0, tried.stderr
        [turn] = json.loads(tried.stdout)["turns"]
        assert turn["status"] == "outcome" and turn["tried"], turn
        assert len(meter.seen) == sent
        added = _added(buyer, spine)
        assert added and all(e.kind == "usage" and e.data["usd"] == 0 for e in added)
        assert all(e.data["tokens"] > 0 for e in added)

    def test_a_version_it_does_not_have_is_refused(self, buyer: User) -> None:
        _placed_and_amended(buyer, [lambda body, n: Outcome(DRAFT)])
        spine = _spine(buyer)
        tried = buyer.hz("heinzel", "try", "notes-digest", "--version", "7")
        assert tried.returncode == 1 and tried.stderr.startswith("HZH500"), tried.stderr
        assert "hint:" in tried.stderr
        lesson = buyer.hz("heinzel", "try", "notes-digest", "--without-lesson", "99")
        assert lesson.returncode == 1 and lesson.stderr.startswith("HZH502"), lesson.stderr
        assert _spine(buyer) == spine
