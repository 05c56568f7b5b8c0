"""The tick: what is due from the index, staging before waking, order, limits and caps."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from heinzel.errors import HeinzelError
from heinzel.service import Service
from heinzel.store.home import Home
from heinzel.tick import Tick, TickReport
from heinzel.tick.daemon import run_loop
from ledger.errors import HzError
from machines.core.turn import TurnMachine
from machines.stores.spine_journal import SpineIndex, SpineJournal

from .conftest import PRS, Recorder, SteppingClock, approved, contract, populate

FRIDAY = dict(days=4, hours=5, minutes=30)  # Mon 09:00 -> Fri 14:30 UTC (15:30 Berlin)


class TestSchedule:
    """Schedule slots come from next_due in the index and are asked for once."""

    def test_a_due_slot_wakes_once_with_the_slot_key(
        self,
        tmp_path: Path,
        service: Service,
        clock: SteppingClock,
        recorder: Recorder,
        tick: Callable[[], TickReport],
    ) -> None:
        """Friday after 15:00 Berlin one schedule wake runs, keyed by the UTC slot; the
        next tick finds nothing."""
        heinzel = approved(service, contract(tmp_path, "report", inputs=PRS))
        assert tick().woken == []
        clock.step(**FRIDAY)
        report = tick()
        assert [(h, [w.key for w in ws]) for h, ws in recorder.calls] == [
            (heinzel, [f"{heinzel}@2026-10-30T14:00:00.000Z"])
        ]
        assert report.fetches == 1
        assert not service.index.db.conn.in_transaction  # what the tick wrote is committed
        assert tick().woken == []
        assert service.show(heinzel)["next_due"] == "2026-11-06T14:00:00.000Z"

    def test_missed_slots_render_once_for_the_latest(
        self,
        tmp_path: Path,
        service: Service,
        clock: SteppingClock,
        recorder: Recorder,
        tick: Callable[[], TickReport],
    ) -> None:
        """A laptop asleep through two Fridays wakes once, for the last slot."""
        heinzel = approved(service, contract(tmp_path, "report", inputs=PRS))
        clock.step(days=12)
        tick()
        assert [w.key for _, ws in recorder.calls for w in ws] == [
            f"{heinzel}@2026-11-06T14:00:00.000Z"
        ]

    def test_inputs_are_staged_before_the_turn_runs(
        self,
        tmp_path: Path,
        service: Service,
        clock: SteppingClock,
        recorder: Recorder,
        tick: Callable[[], TickReport],
    ) -> None:
        """Every staged input is in the source cache when the runner is called, and two
        watchers of one source cost one fetch."""
        approved(service, contract(tmp_path, "one", inputs=PRS))
        approved(service, contract(tmp_path, "two", inputs=PRS))
        clock.step(**FRIDAY)
        report = tick()
        assert report.fetches == 1
        assert recorder.staged_seen == [[True], [True]]

    def test_paused_and_retired_never_wake(
        self,
        tmp_path: Path,
        service: Service,
        clock: SteppingClock,
        recorder: Recorder,
        tick: Callable[[], TickReport],
    ) -> None:
        """Held ones are not asked for, not fetched for, not woken."""
        paused = approved(service, contract(tmp_path, "paused", inputs=PRS))
        retired = approved(service, contract(tmp_path, "retired", inputs=PRS))
        service.lifecycle(paused, "pause")
        service.lifecycle(retired, "retire")
        clock.step(**FRIDAY)
        report = tick()
        assert recorder.calls == []
        assert report.fetches == 0


class TestLimits:
    """At most max_wakes_per_tick per tick, by graph height, then oldest due."""

    def test_the_rest_wake_at_the_next_tick(
        self,
        tmp_path: Path,
        make_service: Callable[..., Service],
        clock: SteppingClock,
        adapters: dict[str, object],
    ) -> None:
        """With a limit of 2, three due ones wake two now and the third next tick."""
        config = tmp_path / "limits.toml"
        config.write_text("[heinzel]\nmax_wakes_per_tick = 2\n", encoding="utf-8")
        service = make_service(HZ_CONFIG=str(config))
        recorder = Recorder(service)
        for name in ("a", "b", "c"):
            approved(service, contract(tmp_path, name))
        clock.step(**FRIDAY)
        first = Tick(service, recorder, adapters, sleep=lambda s: None).run()
        assert len(recorder.calls) == 2
        assert len(first.deferred) == 1
        Tick(service, recorder, adapters, sleep=lambda s: None).run()
        assert len(recorder.calls) == 3
        assert recorder.calls[2][0] == first.deferred[0]

    def test_an_upstream_writer_wakes_before_its_reader(
        self,
        tmp_path: Path,
        service: Service,
        clock: SteppingClock,
        recorder: Recorder,
        tick: Callable[[], TickReport],
    ) -> None:
        """The one whose output another reads comes first, though created later."""
        (tmp_path / "notes.md").write_text("notes\n", encoding="utf-8")
        reader = approved(
            service,
            contract(
                tmp_path,
                "reader",
                requires="documents:read",
                inputs="notes: {from: documents.read, args: {doc: 'file:notes.md'}}",
            ),
        )
        writer = approved(
            service,
            contract(
                tmp_path,
                "writer",
                requires="documents:write",
                outputs="notes: {asset: 'file:notes.md'}",
            ),
        )
        clock.step(**FRIDAY)
        tick()
        assert [h for h, _ in recorder.calls] == [writer, reader]


class TestCaps:
    """A wake that would cross the daily cap is a skipped turn; the user is told once."""

    def test_cap_skips_and_notices_once_a_day(
        self,
        tmp_path: Path,
        make_service: Callable[..., Service],
        clock: SteppingClock,
        adapters: dict[str, object],
    ) -> None:
        """With 0.6 USD a day and 0.5 per turn, the second of three is skipped with reason
        cap, and one notice is posted however many are skipped."""
        service = make_service(HZ_MAX_USD_PER_DAY="0.6")
        recorder = Recorder(service, usd=0.5)
        ids = [approved(service, contract(tmp_path, n)) for n in ("a", "b", "c")]
        clock.step(**FRIDAY)
        report = Tick(service, recorder, adapters, sleep=lambda s: None).run()
        assert len(recorder.calls) == 1
        assert [s["reason"] for s in report.skipped] == ["cap", "cap"], report
        assert report.errors == []
        assert len(report.notices) == 1
        skipped = {s["id"] for s in report.skipped}
        assert skipped == set(ids) - {recorder.calls[0][0]}
        for heinzel in skipped:
            turns = service.show(heinzel)["turns"]
            assert [(t["state"], t["reason"]) for t in turns] == [("skipped", "cap")]
        clock.step(days=7)
        again = Tick(service, recorder, adapters, sleep=lambda s: None).run()
        assert len(again.notices) == 1


class TestWaitsAndCrashes:
    """Waiting turns whose condition holds and turns a dead process left running."""

    def test_a_wait_past_until_resumes_with_timer(
        self,
        tmp_path: Path,
        service: Service,
        clock: SteppingClock,
        recorder: Recorder,
        tick: Callable[[], TickReport],
    ) -> None:
        """A turn.waiting whose until passed is resumed, woken_by timer."""
        heinzel = approved(service, contract(tmp_path, "waiter", schedule=None))
        with service.open_spine(heinzel) as spine:
            spine.append(
                "turn.started",
                {"cause": "asked", "keys": [f"{heinzel}@r1"]},
                turn="t-w",
                key=f"{heinzel}@r1",
            )
            spine.append(
                "turn.waiting", {"step": "think", "until": "2026-10-27T00:00:00.000Z"}, turn="t-w"
            )
        tick()
        assert recorder.resumed == []
        clock.step(days=1)
        tick()
        assert recorder.resumed == [(heinzel, "t-w", "timer")]

    def test_a_wait_whose_output_another_turn_drafted_ends_superseded(
        self,
        tmp_path: Path,
        service: Service,
        recorder: Recorder,
        tick: Callable[[], TickReport],
    ) -> None:
        """A later draft for the same output ends the waiting turn abandoned superseded."""
        heinzel = approved(service, contract(tmp_path, "waiter", schedule=None))
        with service.open_spine(heinzel) as spine:
            journal = SpineJournal(spine, SpineIndex.scan(spine.path))
            machine = TurnMachine(journal, "t-w")
            machine.fire(
                "start", {"cause": "asked", "keys": [f"{heinzel}@r1"]}, key=f"{heinzel}@r1"
            )
            machine.fire(
                "wait", {"step": "gather", "until": "2026-12-01T00:00:00.000Z", "output": "section"}
            )
            spine.append(
                "draft.placed",
                {"output": "section", "asset": "file:/x.md", "hash": "sha256:1"},
                turn="t-other",
                key=f"{heinzel}@v1@s@file:/x.md",
            )
        report = tick()
        assert report.skipped == [{"id": heinzel, "turn": "t-w", "reason": "superseded"}]
        assert recorder.resumed == []
        turns = {t["id"]: t for t in service.show(heinzel)["turns"]}
        assert (turns["t-w"]["disposition"], turns["t-w"]["reason"]) == ("abandoned", "superseded")

    def test_a_running_turn_without_a_process_resumes_as_recovery(
        self,
        tmp_path: Path,
        service: Service,
        recorder: Recorder,
        tick: Callable[[], TickReport],
    ) -> None:
        """A turn the index shows running is resumed when its spine lock is free, and left
        alone while another process holds it."""
        heinzel = approved(service, contract(tmp_path, "crashed", schedule=None))
        with service.open_spine(heinzel) as spine:
            spine.append(
                "turn.started",
                {"cause": "asked", "keys": [f"{heinzel}@r1"]},
                turn="t-c",
                key=f"{heinzel}@r1",
            )
        fd = os.open(service.home.session_dir(heinzel) / "lock", os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            tick()
        finally:
            os.close(fd)
        assert recorder.resumed == []
        tick()
        assert recorder.resumed == [(heinzel, "t-c", "recovery")]


class TestSources:
    """A Heinzelmännchen without a schedule wakes when a watched input moved."""

    def test_a_moved_input_wakes_its_watcher_once_per_fingerprint(
        self,
        tmp_path: Path,
        service: Service,
        clock: SteppingClock,
        recorder: Recorder,
        tick: Callable[[], TickReport],
    ) -> None:
        """The first fetch wakes it (never seen); the same fingerprint does not again."""
        heinzel = approved(service, contract(tmp_path, "reactive", schedule=None, inputs=PRS))
        tick()
        assert [w.cause for _, ws in recorder.calls for w in ws] == ["source-changed"]
        assert recorder.calls[0][1][0].key.startswith(f"{heinzel}@merged_prs:")
        clock.step(minutes=5)
        tick()
        assert len(recorder.calls) == 1


class TestLock:
    """One tick at a time per home."""

    def test_a_held_tick_lock_is_a_coded_error(
        self, service: Service, recorder: Recorder, adapters: dict[str, object]
    ) -> None:
        """HZH220 after the bounded wait, with a hint."""
        service.home.heinzel_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(service.home.tick_lock, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            with pytest.raises(HeinzelError) as caught:
                Tick(service, recorder, adapters, sleep=lambda s: None).run()
        finally:
            os.close(fd)
        assert caught.value.code == "HZH220"


class TestLoop:
    """The daemon loop ticks until a stop is asked, through errors."""

    def test_it_stops_when_wait_says_so_and_survives_errors(self) -> None:
        """Three ticks, the second failing with a coded error; the loop reports both."""
        results: list[Any] = []
        answers = iter([False, False, True])

        def tick() -> TickReport:
            if len(results) == 1:
                results.append("error")
                raise HeinzelError("HZH220", "busy", "later")
            results.append("ok")
            return TickReport(at="now")

        errors: list[HzError] = []
        count = run_loop(
            tick,
            interval=60,
            wait=lambda s: next(answers),
            on_report=lambda r: None,
            on_error=errors.append,
        )
        assert count == 3
        assert [e.code for e in errors] == ["HZH220"]


class TestScale:
    """Asleep costs a few index queries per tick, whatever their number."""

    def test_the_query_count_is_constant_in_the_number_asleep(
        self,
        tmp_path: Path,
        make_service: Callable[..., Service],
        clock: SteppingClock,
        adapters: dict[str, object],
    ) -> None:
        """A tick over 10 and over 300 asleep ones with nothing due runs the same number of
        statements, and wakes and fetches nothing."""
        path = contract(tmp_path, "asleep", inputs=PRS.replace("7d}", "7d, recheck: 1d}"))
        counts = []
        for n in (10, 300):
            service = make_service()
            service.home = Home(tmp_path / f"home{n}")
            populate(service, path, n)
            recorder = Recorder(service)
            Tick(service, recorder, adapters, sleep=lambda s: None).run()  # polls once
            statements: list[str] = []
            service.index.db.conn.set_trace_callback(statements.append)
            report = Tick(service, recorder, adapters, sleep=lambda s: None).run()
            service.index.db.conn.set_trace_callback(None)
            assert report.fetches == 0
            assert recorder.calls == []
            counts.append(len(statements))
        assert counts[0] == counts[1]
        assert counts[0] <= 12


class TestDrafts:
    """Placed drafts the user approved or rejected wake the learning turn; approved
    outputs wake again when they go stale."""

    def _placed(
        self,
        service: Service,
        tmp_path: Path,
        adapters: dict[str, object],
        *,
        schedule: bool = False,
    ) -> tuple[str, str, Path]:
        document = tmp_path / "report.md"
        document.write_text("# Report\n", encoding="utf-8")
        heinzel = approved(
            service,
            contract(
                tmp_path,
                "drafter",
                schedule='"0 15 * * FRI"' if schedule else None,
                requires="documents:write",
                outputs="section: {asset: 'file:report.md', valid_for: 7d}",
            ),
        )
        key = f"{heinzel}@v1@2026-10-26T09:00:00.000Z@file:{document}"
        digest = adapters["documents"].place_draft(
            key,
            f"file:{document}",
            "Shipped.",
            "🧝 DRAFT (drafter v1): edit, then delete this line to approve",
        )  # type: ignore[attr-defined]
        with service.open_spine(heinzel) as spine:
            spine.append(
                "draft.placed",
                {
                    "asset": f"file:{document}",
                    "output": "section",
                    "hash": digest,
                    "contract_version": 1,
                },
                turn="t-d",
                key=key,
            )
        return heinzel, key, document

    def test_an_approved_draft_wakes_the_approval_turn_once(
        self,
        tmp_path: Path,
        service: Service,
        clock: SteppingClock,
        recorder: Recorder,
        adapters: dict[str, object],
        tick: Callable[[], TickReport],
    ) -> None:
        """Pending: nothing; tag line deleted: one approval wake; then nothing again."""
        heinzel, _key, document = self._placed(service, tmp_path, adapters)
        tick()
        assert recorder.calls == []
        text = document.read_text(encoding="utf-8")
        document.write_text(
            "\n".join(x for x in text.splitlines() if not x.startswith("🧝")) + "\n",
            encoding="utf-8",
        )
        tick()
        assert [(h, [w.cause for w in ws]) for h, ws in recorder.calls] == [(heinzel, ["approval"])]
        tick()
        assert len(recorder.calls) == 1

    def test_an_approval_runs_alone_and_before_a_slot_due_with_it(
        self,
        tmp_path: Path,
        service: Service,
        clock: SteppingClock,
        recorder: Recorder,
        adapters: dict[str, object],
        tick: Callable[[], TickReport],
    ) -> None:
        """The learning turn is its own call, first; the slot's turn comes after it."""
        heinzel, _key, document = self._placed(service, tmp_path, adapters, schedule=True)
        text = document.read_text(encoding="utf-8")
        lines = [x for x in text.splitlines() if not x.startswith("🧝")]
        document.write_text("\n".join(lines) + "\n", encoding="utf-8")
        clock.step(**FRIDAY)
        tick()
        assert [(h, [w.cause for w in ws]) for h, ws in recorder.calls] == [
            (heinzel, ["approval"]),
            (heinzel, ["schedule"]),
        ]

    def test_an_approved_output_goes_stale_after_valid_for(
        self,
        tmp_path: Path,
        service: Service,
        clock: SteppingClock,
        recorder: Recorder,
        adapters: dict[str, object],
        tick: Callable[[], TickReport],
    ) -> None:
        """Approved at t, valid for 7d: a stale wake at t + 7d, keyed by valid_until."""
        heinzel, key, _ = self._placed(service, tmp_path, adapters)
        with service.open_spine(heinzel) as spine:
            spine.append("approval.observed", {"share_changed": 0.0}, turn="t-a", key=key)
        clock.step(days=6)
        tick()
        assert recorder.calls == []
        clock.step(days=1)
        tick()
        assert [w.key for _, ws in recorder.calls for w in ws] == [
            f"{heinzel}@stale:section:2026-11-02T09:00:00.000Z"
        ]


@pytest.mark.kill
class TestStagedBeforeTheWake:
    """A tick killed between staging and the first turn.started fetches nothing again."""

    def test_the_rerun_reads_the_staged_inputs(
        self,
        tmp_path: Path,
        make_service: Callable[..., Service],
        clock: SteppingClock,
        adapters: dict[str, object],
    ) -> None:
        """The killed tick staged the source; the tick after it at the same moment fetches
        nothing and hands the staged input to the turn."""
        import subprocess
        import sys

        path = contract(tmp_path, "report", inputs=PRS)
        home = tmp_path / "home"
        script = Path(__file__).with_name("killed_tick.py")
        create = subprocess.run(
            [sys.executable, str(script), str(home), str(path), "2026-10-26T09:00:00+00:00"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert create.stdout.splitlines()[-1] == "1"  # Monday: polled, nothing due
        killed = subprocess.run(
            [sys.executable, str(script), str(home), str(path), "2026-10-30T14:30:00+00:00"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert killed.returncode == 137
        service = make_service()
        recorder = Recorder(service)
        clock.step(**FRIDAY)
        report = Tick(service, recorder, adapters, sleep=lambda s: None).run()
        assert report.fetches == 0
        assert recorder.staged_seen == [[True]]
        assert [w.cause for _, ws in recorder.calls for w in ws] == ["schedule"]
