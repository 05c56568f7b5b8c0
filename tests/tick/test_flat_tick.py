"""A tick flat in the fleet's size: a due source is one request whoever watches it, and
only the watchers its answer concerns (those it wakes, those it failed) are asked for."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import heinzel.tick.tick as tick_module
from heinzel.service import Service
from heinzel.store.sources import SourceRequest
from heinzel.tick import TickReport

from .conftest import Recorder, SteppingClock, approved, contract, populate

NOTES = "notes: {{from: files.read, args: {{path: {path}}}, recheck: 10m}}"


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[SourceRequest]:
    """Every `SourceRequest` the tick builds."""
    made: list[SourceRequest] = []

    def counted(*args: Any, **kwargs: Any) -> SourceRequest:
        request = SourceRequest(*args, **kwargs)
        made.append(request)
        return request

    monkeypatch.setattr(tick_module, "SourceRequest", counted)
    return made


def fleet(tmp_path: Path, service: Service, count: int) -> tuple[Path, list[str], str]:
    """``count`` scheduled watchers of one file (folded into the index) and one watcher
    of it with no schedule (a real spine); the file, the scheduled ids, the reactive id."""
    shared = tmp_path / "shared.txt"
    shared.write_text("v0\n", encoding="utf-8")
    notes = NOTES.format(path=shared)
    scheduled = populate(
        service, contract(tmp_path, "weekly", inputs=notes, requires="files:read"), count
    )
    reactive = approved(
        service, contract(tmp_path, "reactive", schedule=None, inputs=notes, requires="files:read")
    )
    return shared, scheduled, reactive


def test_a_due_source_nobody_must_hear_of_is_one_request(
    tmp_path: Path,
    service: Service,
    clock: SteppingClock,
    recorder: Recorder,
    tick: Callable[[], TickReport],
    built: list[SourceRequest],
) -> None:
    """40 asleep watchers of a file whose recheck is due and which did not move: one
    fetch, one request built, nobody woken."""
    fleet(tmp_path, service, 40)
    tick()  # the first poll: the reactive one has never seen it
    assert len(recorder.calls) == 1
    clock.step(minutes=20)
    built.clear()
    report = tick()
    assert (report.fetches, report.woken, report.errors) == (1, [], [])
    assert len(built) == 1


def test_a_moved_source_wakes_only_the_watcher_without_a_schedule(
    tmp_path: Path,
    service: Service,
    clock: SteppingClock,
    recorder: Recorder,
    tick: Callable[[], TickReport],
    built: list[SourceRequest],
) -> None:
    """The file moves: the one watcher without a schedule wakes (source-changed); the 40
    with a schedule, none of whose turns read it yet, first look at it at their slot, and
    no request is built for them."""
    shared, _, reactive = fleet(tmp_path, service, 40)
    tick()
    clock.step(minutes=20)
    shared.write_text("v1\n", encoding="utf-8")
    built.clear()
    tick()
    assert [(h, [w.cause for w in ws]) for h, ws in recorder.calls[1:]] == [
        (reactive, ["source-changed"])
    ]
    assert len(built) == 2  # the source, and the one watcher it wakes


def test_a_failing_source_is_each_watchers_error(
    tmp_path: Path,
    service: Service,
    clock: SteppingClock,
    tick: Callable[[], TickReport],
) -> None:
    """A source that fails is still every watcher's error, as before (it fails alone)."""
    shared, scheduled, reactive = fleet(tmp_path, service, 5)
    tick()
    clock.step(minutes=20)
    shared.unlink()
    report = tick()
    assert sorted(e["id"] for e in report.errors) == sorted([*scheduled, reactive])
    assert {e["input"] for e in report.errors} == {"notes"}


def test_the_upstream_question_starts_from_the_reads_not_every_input(
    tmp_path: Path, service: Service, clock: SteppingClock, tick: Callable[[], TickReport]
) -> None:
    """Whom an approved output wakes is asked from the inputs that read an asset
    (`tick_reads`): no statement of a tick over asleep watchers scans every input
    (`tick_inputs`), whose rows grow with the asleep (ADR 0049, statement 12)."""
    fleet(tmp_path, service, 30)
    tick()
    clock.step(minutes=20)
    ran: list[str] = []
    service.index.db.conn.set_trace_callback(ran.append)
    tick()
    service.index.db.conn.set_trace_callback(None)
    upstream = [sql for sql in ran if "tick_approved a" in sql]
    assert upstream, "the tick asked whom approved outputs wake"
    for sql in upstream:
        plan = service.index.db.conn.execute(f"EXPLAIN QUERY PLAN {sql}").fetchall()
        scans = [str(row[-1]) for row in plan if str(row[-1]).startswith("SCAN")]
        assert scans == ["SCAN r"], scans


def test_the_due_sources_are_found_without_walking_their_watchers(
    tmp_path: Path, service: Service, clock: SteppingClock, tick: Callable[[], TickReport]
) -> None:
    """Which sources are due is asked from `tick_sources`, each one's shortest recheck
    among its active watchers searched in `tick_inputs_recheck` order (the first active
    one): the query walks no source's watchers (ADR 0049, statement 12), and the file is
    still asked once and nobody woken."""
    fleet(tmp_path, service, 30)
    tick()
    clock.step(minutes=20)
    ran: list[str] = []
    service.index.db.conn.set_trace_callback(ran.append)
    report = tick()
    service.index.db.conn.set_trace_callback(None)
    assert (report.fetches, report.woken, report.errors) == (1, [], [])
    due = [sql for sql in ran if "FROM tick_sources c" in sql]
    assert due, "the tick asked which sources are due"
    for sql in due:
        plan = service.index.db.conn.execute(f"EXPLAIN QUERY PLAN {sql}").fetchall()
        scans = [str(row[-1]) for row in plan if str(row[-1]).startswith("SCAN")]
        assert [scan.split()[1] for scan in scans] == ["c"], scans
