"""The tick: find what is due from the index, stage every input, wake what moved.

`Tick.run()` takes the tick lock (``<home>/heinzel/tick.lock``), asks the index what is
due (`heinzel.tick.plan.Planner`), reads the state of every placed draft from the
documents adapter, fetches each source whose recheck is due exactly once and stages it in
the source cache (`heinzel.store.sources.fetch_once`) before any turn starts, and builds the
wakes: schedule slots, approvals and rejections, stale outputs, inputs that moved (for a
scheduled one once a turn of it read the input), waits that are due, turns a dead process left
running, requests still pending in an inbox with no turn to take them, and once a day the
sources the contracts' ``discover`` hints name (`heinzel.tick.discover`). The new wakes of
one whose turn runs in another process are handed to that turn (`heinzel.tick.handing`).
Keys the index already has a final turn for are dropped. Heinzelmännchen are woken by graph height,
then oldest due, at most ``max_wakes_per_tick``; one whose new wakes would cross the
daily cap gets one ``turn.skipped{reason: cap}`` instead, and the user one
``notice.posted`` a day. The turn itself is the host's (`TurnRunner`, which
`heinzel.turns.Turns` satisfies): it coalesces by the key rule and decides if-moved.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, field
from datetime import datetime, timedelta
from typing import Any, Protocol, cast

from heinzel.capabilities.protocols import Approved, ReadCapability, Rejected
from heinzel.errors import HeinzelError
from heinzel.ids import new_id
from heinzel.session.open_turns import abandon_turn, lock_held
from heinzel.session.sessions import Sessions
from heinzel.session.spend import spent_today
from heinzel.store.sources import SourceCache, SourceRequest, TickFetch, fetch_once, restage
from heinzel.tick.discover import Discovery
from heinzel.tick.flow import flow_notices
from heinzel.tick.handing import hand, inbox_wakes
from heinzel.tick.housekeeping import housekeep
from heinzel.tick.isolate import isolated
from heinzel.tick.plan import Due, InputRow, Planner, latest_slot
from heinzel.tick.superseded import superseded_approvals
from ledger.errors import LedgerError
from ledger.event import format_ts, parse_ts
from ledger.files import ensure_private_dir
from ledger.lock import Sleep, take_lock
from ledger.records import mutable_record
from machines import keys
from machines.core.waits import Facts, due_waits
from machines.crashkit.crash import crash_at
from machines.keys import Wake, coalesce
from machines.stores.spine_journal import SpineIndex, SpineJournal

__all__ = ["TeamHook", "Tick", "TickReport", "TurnRunner"]


class TurnRunner(Protocol):
    """What runs turns: `heinzel.turns.Turns` (the tick never imports the turn host)."""

    def run_wakes(
        self,
        heinzel_id: str,
        wakes: Sequence[Wake],
        *,
        adapters: Mapping[str, object],
        staged: TickFetch | None = None,
        data: Mapping[str, Any] | None = None,
    ) -> Sequence[object]:
        """Start, coalesce or resume turns for ``wakes`` by the key rule (``data``: more
        fields for ``turn.started``, a team turn's fencing token)."""
        ...

    def resume_turn(
        self, heinzel_id: str, turn: str, woken_by: str, *, adapters: Mapping[str, object]
    ) -> object | None:
        """Resume one turn (a due wait, or a crashed turn with ``recovery``)."""
        ...


class TeamHook(Protocol):
    """The team's part of a tick (`heinzel.team.Team`; the tick never imports it):
    leases and pushes before and after, and which team wakes this daemon may run."""

    def before(self, report: TickReport) -> None: ...

    def admit(
        self, heinzel: str, wakes: Sequence[Wake], resumes: Sequence[tuple[str, str]]
    ) -> tuple[list[Wake], list[tuple[str, str]]]: ...

    def claim(self, report: TickReport, heinzels: Sequence[str]) -> set[str]: ...

    def started_data(self, heinzel: str) -> dict[str, Any] | None: ...

    def after(self, report: TickReport) -> None: ...


@mutable_record
class TickReport:
    """What one tick did, for the log, ``--json`` and the tests."""

    at: str
    woken: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    deferred: list[str] = field(default_factory=list)
    handed: list[dict[str, Any]] = field(default_factory=list)
    busy: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    fetches: int = 0
    team: dict[str, Any] = field(default_factory=dict)
    pruned: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@mutable_record
class _Plan:
    wakes: dict[str, list[Wake]] = field(default_factory=dict)
    resumes: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    since: dict[str, str] = field(default_factory=dict)

    def wake(self, heinzel: str, wake: Wake, since: str) -> None:
        """Plan ``wake`` (a key found twice, say moved and handed back, once)."""
        wakes = self.wakes.setdefault(heinzel, [])
        if all(w.key != wake.key for w in wakes):
            wakes.append(wake)
        self._since(heinzel, since)

    def resume(self, heinzel: str, turn: str, woken_by: str, since: str) -> None:
        self.resumes.setdefault(heinzel, []).append((turn, woken_by))
        self._since(heinzel, since)

    def _since(self, heinzel: str, since: str) -> None:
        self.since[heinzel] = min(self.since.get(heinzel, since), since)

    def ids(self) -> set[str]:
        return set(self.wakes) | set(self.resumes)


class Tick:
    """One tick over a home: the index asked, the sources staged, the wakes run."""

    def __init__(
        self,
        service: Sessions,
        runner: TurnRunner,
        adapters: Mapping[str, object],
        *,
        sleep: Sleep,
        team: TeamHook | None = None,
    ) -> None:
        self.service = service
        self.runner = runner
        self.adapters = adapters
        self.sleep = sleep
        self.team = team

    def run(self) -> TickReport:
        """Take the tick lock and tick once (HZH220 when another tick holds it)."""
        home = self.service.home
        ensure_private_dir(home.heinzel_dir)  # the home too, 0700 (not mkdir's 0755 parents)
        timeout = self.service.settings.heinzel.lock_timeout.total_seconds()
        try:
            fd = take_lock(home.tick_lock, timeout, self.sleep)
        except LedgerError as error:
            if error.code != "HZL010":
                raise
            raise HeinzelError(
                "HZH220",
                f"another tick is running in {home.root} (waited {timeout:g} s)",
                "let it finish; a timer that fires while one runs can skip this tick",
            ) from None
        try:
            report = self._tick()
            report.notices += superseded_approvals(self.service, self.adapters, report.errors)
            report.notices += flow_notices(self.service, report.errors)
            report.pruned = len(housekeep(self.service, self.service.clock(), report.errors))
            if self.team is not None:
                self.team.after(report)
            return report
        finally:
            os.close(fd)

    # -- one tick ------------------------------------------------------------------

    def _tick(self) -> TickReport:
        now = self.service.clock()
        planner = Planner(self.service.index.db)
        due = planner.due(now)
        report = TickReport(at=format_ts(now))
        if self.team is not None:
            self.team.before(report)
        plan = _Plan()
        decided = self._drafts(due, plan, report)
        staged = TickFetch(staged=[], fetches=0)
        with isolated(self.service, "sources", report.errors, "stage"):
            staged = self._stage(due, planner, now, report)
        crash_at("staged")  # HZ_CRASH_AT=at:staged: the cache written, no turn started
        self._slots(due, plan, now)
        for row in due.stale:
            wake = Wake("stale", keys.stale(row["heinzel"], row["output"], row["valid_until"]))
            plan.wake(row["heinzel"], wake, row["valid_until"])
        self._moved(due, staged, plan, report, planner)
        self._approved_upstream(plan, planner)
        self._waits(due, staged=staged, decided=decided, planner=planner, plan=plan, now=now)
        self._running(due, plan)
        self._inbox(due, plan, planner, report)
        for found in Discovery(self.service).run(now, planner, report.errors):
            plan.wake(found.heinzel, found.wake, report.at)
        if not plan.ids():
            return report
        # A key with any turn is not woken again: a final one is done, an open one is
        # resumed above (recovery, a due wait) or is running in another process.
        taken = planner.taken(k.key for ws in plan.wakes.values() for k in ws)
        for heinzel, wakes in list(plan.wakes.items()):
            plan.wakes[heinzel] = [w for w in wakes if w.key not in taken]
        if self.team is not None:
            self._team_gate(plan)
        ids = [i for i in plan.ids() if plan.wakes.get(i) or plan.resumes.get(i)]
        ids = self._newer(ids, report)
        busy = [i for i in ids if lock_held(self.service.home.session_dir(i) / "lock")]
        ids = [i for i in ids if i not in busy]
        heights = planner.heights(ids)
        ids.sort(key=lambda i: (heights.get(i, 0), plan.since[i], i))
        limit = self.service.settings.heinzel.max_wakes_per_tick
        report.deferred = ids[limit:]
        if self.team is not None:
            for heinzel in self.team.claim(report, [*busy, *ids[:limit]]):
                plan.wakes[heinzel] = []
        self._hand(busy, plan, report)
        for heinzel in ids[:limit]:
            self._wake(
                heinzel,
                plan=plan,
                staged=staged,
                planner=planner,
                now=now,
                report=report,
            )
        self._downstream(planner, staged, now, report, limit - len(ids[:limit]))
        return report

    def _downstream(
        self, planner: Planner, staged: TickFetch, now: datetime, report: TickReport, room: int
    ) -> None:
        """Approvals this tick's turns observed wake their readers in the same tick, after
        the writers and in height order, within what is left of ``max_wakes_per_tick``
        (the rest wake at the next tick by the same keys). With a team repository they
        wake at the next tick: a tick claims its team wakes once."""
        if room <= 0 or self.team is not None:
            return
        later = _Plan()
        ids = sorted(set(self._approved_upstream(later, planner)))
        ids = [i for i in ids if not lock_held(self.service.home.session_dir(i) / "lock")]
        heights = planner.heights(ids)
        ids.sort(key=lambda i: (heights.get(i, 0), later.since[i], i))
        for heinzel in ids[:room]:
            self._wake(heinzel, plan=later, staged=staged, planner=planner, now=now, report=report)

    def _newer(self, ids: list[str], report: TickReport) -> list[str]:
        """Leave out each one a newer hz wrote into (a turn of a later vocabulary): one
        notice each, nothing written there (`heinzel.index.versions`)."""
        from heinzel.index.versions import newer, newer_note

        later = newer(self.service.index.db.conn, ids)
        if later:
            names = dict(
                self.service.index.db.conn.execute(
                    f"SELECT id, name FROM heinzel WHERE id IN ({', '.join('?' * len(later))})",  # noqa: S608
                    sorted(later),
                ).fetchall()
            )
            for heinzel in sorted(later):
                name = names.get(heinzel, heinzel)
                report.notices.append(f"{name}: skipped, {newer_note(later[heinzel])}: upgrade hz")
        return [i for i in ids if i not in later]

    def _hand(self, busy: list[str], plan: _Plan, report: TickReport) -> None:
        """A Heinzelmännchen whose spine lock another process holds (a turn running there)
        is not waited for (HZL010): its new wakes are handed to that turn through the inbox
        (`heinzel.tick.handing.hand`: ``turn.requested``, one follow-up turn after it), and
        a due wait of it stays due for the next tick (``busy``)."""
        for heinzel in busy:
            handed = hand(self.service, heinzel, plan.wakes.get(heinzel, []), report.errors)
            if handed is not None:
                report.handed.append(handed)
            if resumes := plan.resumes.get(heinzel):
                report.busy.append({"id": heinzel, "causes": sorted({w for _, w in resumes})})

    def _team_gate(self, plan: _Plan) -> None:
        """A team Heinzelmännchen runs only where the team hook says (its lease); its new
        wakes are claimed later, only those that run this tick (after the busy and the
        wake-limit filters), and a wake whose claim did not take waits."""
        assert self.team is not None
        for heinzel in plan.ids():
            wakes, resumes = self.team.admit(
                heinzel, plan.wakes.get(heinzel, []), plan.resumes.get(heinzel, [])
            )
            plan.wakes[heinzel], plan.resumes[heinzel] = wakes, resumes

    def _drafts(self, due: Due, plan: _Plan, report: TickReport) -> set[str]:
        """Ask the documents adapter for each placed draft; decided ones wake the learning
        turn (the approval key is once per placed draft)."""
        decided: set[str] = set()
        if not due.drafts:
            return decided  # nothing placed: the adapters are not even built (issue 42)
        documents = self.adapters.get("documents")
        if documents is None:
            return decided
        for row in due.drafts:
            state = None
            with isolated(self.service, row["heinzel"], report.errors, "draft state"):
                state = documents.draft_state(row["key"])  # type: ignore[attr-defined]
            if isinstance(state, Approved | Rejected):
                decided.add(row["key"])
                output = row["output"] or "output"
                wake = Wake("approval", keys.approval(row["heinzel"], output, row["key"]))
                plan.wake(row["heinzel"], wake, row["placed_at"] or "")
        return decided

    def _stage(self, due: Due, planner: Planner, now: datetime, report: TickReport) -> TickFetch:
        """Fetch every source whose recheck is due once, staged before any turn starts.
        A due source is one request whoever watches it; after the poll the index names
        the watchers its answer concerns (`Planner.watchers`: those it wakes, those it
        failed), so a tick where nothing moved builds nothing per watcher. The inputs of
        those due anyway (a slot, a wait) are staged for their turns as before. Each
        source fails alone (`fetch_once`: its error is its readers', kept with when to
        ask again); the whole staging runs `isolated` in `_tick`, so not even a bug here
        stops the turns of those whose inputs were not due."""
        if not due.inputs and not due.sources:
            return TickFetch(staged=[], fetches=0)
        polled = [
            SourceRequest(
                watcher="",
                input="",
                capability=row.capability,
                method=row.method,
                args=row.args,
                window=None if row.window_s is None else timedelta(seconds=row.window_s),
                recheck=timedelta(seconds=row.recheck_s),
            )
            for row in due.sources
        ]
        owned = [_request(row) for row in due.inputs]
        shortest = {row.key: row.recheck_s for row in due.sources}
        for row in due.inputs:
            shortest[row.source_key] = min(
                shortest.get(row.source_key, row.recheck_s), row.recheck_s
            )
        readers = cast(Mapping[str, ReadCapability], self.adapters)
        cache = SourceCache.of(self.service.home)
        fetched = fetch_once([*polled, *owned], readers, now, cache=cache, respect_backoff=True)
        report.fetches = fetched.fetches
        staged = fetched.staged[len(polled) :]
        mine = {(s.request.watcher, s.request.input) for s in staged}
        for source in fetched.staged[: len(polled)]:
            known = source.fetched
            prints = None if source.error is not None or known is None else known.fingerprints
            whole = None if prints is None or known is None else known.fingerprint
            for row in planner.watchers(source.key, prints, whole):
                if (row.heinzel, row.input) not in mine:
                    due.inputs.append(row)  # `_moved` reads who is scheduled from here
                    staged.append(restage(source, _request(row)))
        planner.checked(
            (key, format_ts(now + timedelta(seconds=seconds))) for key, seconds in shortest.items()
        )
        for item in staged:
            if item.error is not None:
                report.errors.append(
                    {
                        "id": item.request.watcher,
                        "input": item.request.input,
                        "code": item.error.code,
                        "message": f"input {item.request.input}: {item.error.message}",
                        "hint": item.error.hint,
                    }
                )
        return TickFetch(staged=staged, fetches=fetched.fetches)

    def _slots(self, due: Due, plan: _Plan, now: datetime) -> None:
        for row in due.slots:
            slot = latest_slot(row["schedule"], row["timezone"], parse_ts(row["next_due"]), now)
            wake = Wake("schedule", keys.schedule(row["id"], format_ts(slot)))
            plan.wake(row["id"], wake, row["next_due"])

    def _moved(
        self, due: Due, staged: TickFetch, plan: _Plan, report: TickReport, planner: Planner
    ) -> None:
        """An input that moved wakes its watcher (ADR 0049 statement 7), one with a
        schedule too, its wake coalesced with a slot due in the same tick (one turn, both
        causes). One with a schedule whose turns never read the input (nothing seen yet)
        first looks at it at its slot, and one whose contract says ``source_changed:
        at-slot`` only ever there. An input that reads another one's output never
        wakes it here (a pending draft moves the file too): it wakes on that output's
        approvals (`_approved_upstream`)."""
        scheduled = {row.heinzel for row in due.inputs if row.scheduled}
        at_slot = {(row.heinzel, row.input) for row in due.inputs if row.at_slot}
        for item in staged.staged:
            watcher = item.request.watcher
            if not item.moved or item.fingerprint is None:
                continue
            if (watcher, item.request.input) in at_slot:
                continue  # its contract says source_changed: at-slot
            if watcher in scheduled and item.request.last_seen is None:
                continue
            if planner.reads_upstream(watcher, item.request.input):
                continue
            key = keys.source_changed(watcher, item.request.input, item.fingerprint)
            plan.wake(watcher, Wake("source-changed", key), report.at)

    def _approved_upstream(self, plan: _Plan, planner: Planner) -> list[str]:
        """Readers of another one's output wake when its approved text's fingerprint
        (``output_fp``) is one they were not woken for: the key ``<reader>@<input>:<fp>``,
        once per approved text (the same text approved again is the same key, taken).
        The ids planned."""
        rows = planner.approved_upstream()
        found = [(r, keys.source_changed(r["heinzel"], r["input"], r["output_fp"])) for r in rows]
        taken = planner.taken(key for _, key in found)
        planned: list[str] = []
        for row, key in found:
            if key not in taken:
                plan.wake(row["heinzel"], Wake("source-changed", key), row["at"] or "")
                planned.append(row["heinzel"])
        return planned

    def _waits(
        self,
        due: Due,
        *,
        staged: TickFetch,
        decided: set[str],
        planner: Planner,
        plan: _Plan,
        now: datetime,
    ) -> None:
        if not due.waits:
            return
        answers = planner.answers(h for h, _ in due.waits)
        for heinzel in sorted({h for h, _ in due.waits}):
            fingerprints = {
                s.request.input: s.fingerprint
                for s in staged.staged
                if s.request.watcher == heinzel and s.fingerprint is not None
            }
            facts = Facts(
                fingerprints=fingerprints,
                approvals=frozenset(decided),
                answers=answers,
                drafts=planner.latest_drafts(heinzel),
            )
            waits = [w for h, w in due.waits if h == heinzel]
            questions = {w.turn for w in waits if (w.on or {}).get("kind") == "answer"}
            for found in due_waits(now, waits, facts):
                woken_by = found.woken_by
                if woken_by == "timer" and found.turn in questions:
                    woken_by = "unanswered"  # past max_wait: ends as the contract says
                plan.resume(heinzel, found.turn, woken_by, format_ts(now))

    def _running(self, due: Due, plan: _Plan) -> None:
        """A turn the index shows running whose spine lock is free was left by a dead
        process: resume it (``recovery``). One whose lock is held is still running."""
        for row in due.running:
            if not lock_held(self.service.home.session_dir(row["heinzel"]) / "lock"):
                plan.resume(row["heinzel"], row["id"], "recovery", row["started_at"] or "")

    def _inbox(self, due: Due, plan: _Plan, planner: Planner, report: TickReport) -> None:
        """Requests pending in an inbox with no turn to take them (a chat, a wake handed
        to a turn that ended first) wake their Heinzelmännchen (`heinzel.tick.handing`)."""
        awake = {row["heinzel"] for row in due.running}
        for heinzel, wake, since in inbox_wakes(self.service, awake, planner.taken, report.errors):
            plan.wake(heinzel, wake, since)

    # -- waking one ------------------------------------------------------------------

    def _wake(
        self,
        heinzel: str,
        *,
        plan: _Plan,
        staged: TickFetch,
        planner: Planner,
        now: datetime,
        report: TickReport,
    ) -> None:
        wakes = plan.wakes.get(heinzel, [])
        took_move = False
        with isolated(self.service, heinzel, report.errors, "wake"):
            if wakes and self._over_cap(heinzel, planner, now):
                self._skip_cap(heinzel, wakes, planner, now, report)
                wakes = []
            for turn, planned in plan.resumes.get(heinzel, []):
                woken_by = planned
                if woken_by == "superseded":
                    # chats queued for it keep their marks: the next tick wakes them
                    abandon_turn(self.service, heinzel, turn, "superseded")
                    report.skipped.append({"id": heinzel, "turn": turn, "reason": "superseded"})
                    continue
                if woken_by == "unanswered":
                    from heinzel.index.flow import unanswered

                    if unanswered(self.service.index.db, heinzel) == "abandon":
                        self._unanswered(heinzel, turn, now, report)
                        continue
                    woken_by = "timer"  # fall back: the turn goes on without the answer
                state = self.runner.resume_turn(heinzel, turn, woken_by, adapters=self.adapters)
                report.woken.append(
                    {"id": heinzel, "turn": turn, "woken_by": woken_by, "ended": _ended([state])}
                )
                if woken_by == "source":
                    # the turn that waited for a source to move took the move: it is not
                    # a second turn's wake too (its fingerprints are still marked seen)
                    took_move = any(w.cause == "source-changed" for w in wakes)
                    wakes = [w for w in wakes if w.cause != "source-changed"]
            mine = TickFetch(
                staged=[s for s in staged.staged if s.request.watcher == heinzel], fetches=0
            )
            # each approval is its own learning turn, before the rest (so a draft due in
            # the same tick already has its lessons), and a discovered source its own turn
            # (it proposes one amendment); the rest coalesce into one turn
            alone = ("approval", "discovered")
            batches = [[w] for w in wakes if w.cause in alone]
            batches += [rest] if (rest := [w for w in wakes if w.cause not in alone]) else []
            for batch in batches:
                started = self.team.started_data(heinzel) if self.team is not None else None
                more = {"data": started} if started is not None else {}
                states = self.runner.run_wakes(
                    heinzel, batch, adapters=self.adapters, staged=mine, **more
                )
                ended = _ended(states)
                if not ended and batch[0].cause == "approval":
                    ended = [self._approval_ended(heinzel, batch[0].key)]
                report.woken.append(
                    {
                        "id": heinzel,
                        "wakes": [{"cause": w.cause, "key": w.key} for w in batch],
                        "ended": ended,
                    }
                )
            if wakes or took_move:
                planner.seen(
                    (heinzel, s.request.input, s.fingerprint)
                    for s in mine.staged
                    if s.fingerprint is not None
                )

    def _unanswered(self, heinzel: str, turn: str, now: datetime, report: TickReport) -> None:
        """A question unanswered past ``max_wait`` of a contract that says ``unanswered:
        abandon``: the turn ends ``abandoned (unanswered)``, never waits again, and its user
        gets one ``notice.posted{reason: unanswered}`` keyed ``<id>@notice:unanswered:<turn>``."""
        abandon_turn(self.service, heinzel, turn, "unanswered")
        text = f"turn {turn} ended unanswered: its question waited max_wait without an answer"
        with self.service.open_spine(heinzel) as spine:
            spine.append(
                "notice.posted",
                {"reason": "unanswered", "day": format_ts(now)[:10], "message": text},
                key=f"{heinzel}@notice:unanswered:{turn}",
                short_text=("message",),
            )
        report.skipped.append({"id": heinzel, "turn": turn, "reason": "unanswered"})
        report.notices.append(text)

    def _approval_ended(self, heinzel: str, key: str) -> dict[str, Any]:
        """How an approval wake that ran no turn ended, from the index: the draft read as
        rejected (its markers gone: one ``approval.observed{rejected}``) or nothing to
        learn (no approved draft under the key any more)."""
        _, output, _ = keys.approval_parts(key)
        rows = [
            row
            for row in self.service.index.db.query(
                "SELECT key, hash, state FROM drafts WHERE heinzel = ? AND output = ?",
                [heinzel, output],
            )
            if keys.approval_names(key, str(row["key"]), row["hash"])
        ]
        draft = str(rows[0]["key"]) if rows else None
        rejected = bool(rows) and rows[0]["state"] == "rejected"
        ended = dict.fromkeys(("turn", "state", "disposition", "reason", "error"))
        return {**ended, "approval": "rejected" if rejected else "nothing-to-learn", "draft": draft}

    def _over_cap(self, heinzel: str, planner: Planner, now: datetime) -> bool:
        settings = self.service.settings.heinzel
        cap = planner.turn_cap(heinzel)
        expected = settings.max_usd if cap is None else min(cap, settings.max_usd)
        spent = spent_today(self.service.index, self.service.home, now)  # open turns too
        return spent + expected > settings.max_usd_per_day

    def _skip_cap(
        self,
        heinzel: str,
        wakes: Sequence[Wake],
        planner: Planner,
        now: datetime,
        report: TickReport,
    ) -> None:
        """One ``turn.skipped{reason: cap}`` for the new wakes, and the day's notice."""
        from machines.core.resume import skip_turn  # the runner's imports: not for an idle tick

        day = format_ts(now)[:10]
        with self.service.open_spine(heinzel) as spine:
            journal = SpineJournal(spine, SpineIndex.scan(spine.path))
            start = coalesce(journal, wakes).start
            if start:
                turn = "t-" + new_id(self.service.clock)[3:]
                skip_turn(journal, turn=turn, wakes=start, reason="cap")
                report.skipped.append(
                    {"id": heinzel, "turn": turn, "reason": "cap", "keys": [w.key for w in start]}
                )
            if start and not planner.noticed("cap", day):
                cap = self.service.settings.heinzel.max_usd_per_day
                text = f"the daily cap of {cap:g} USD is reached; more wakes are skipped today"
                spine.append(
                    "notice.posted",
                    {"reason": "cap", "day": day, "message": text},
                    key=f"{heinzel}@notice:cap:{day}",
                    short_text=("message",),
                )
                report.notices.append(text)


def _request(row: InputRow) -> SourceRequest:
    """One watcher's input as `fetch_once` takes it."""
    return SourceRequest(
        watcher=row.heinzel,
        input=row.input,
        capability=row.capability,
        method=row.method,
        args=row.args,
        window=None if row.window_s is None else timedelta(seconds=row.window_s),
        recheck=timedelta(seconds=row.recheck_s),
        facet=row.facet,
        last_seen=row.last_seen,
    )


def _ended(states: Sequence[object | None]) -> list[dict[str, Any]]:
    """How each turn a wake ran ended: turn, state, disposition and its codes."""
    fields = ("turn", "state", "disposition", "reason", "error")
    return [{f: getattr(s, f, None) for f in fields} for s in states if s is not None]
