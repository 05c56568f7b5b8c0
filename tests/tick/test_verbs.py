"""The inbox and the user's verbs: chat, resume, stop, retry, and approving a local draft."""

from __future__ import annotations

import fcntl
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest

from heinzel.capabilities.protocols import Approved
from heinzel.errors import HeinzelError
from heinzel.service import Service
from heinzel.store.inbox import Inbox
from heinzel.tick.verbs import Verbs
from machines.core.turn import TurnMachine
from machines.keys import Wake
from machines.stores.spine_journal import SpineIndex, SpineJournal

from .conftest import Recorder, SteppingClock, approved, contract


@contextmanager
def held(service: Service, heinzel: str) -> Iterator[None]:
    """Another process's turn: its spine lock held."""
    fd = os.open(service.home.session_dir(heinzel) / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        os.close(fd)


def open_turn(service: Service, heinzel: str, *triggers: str) -> str:
    """A turn left open by a dead process, walked through ``triggers`` after start."""
    with service.open_spine(heinzel) as spine:
        machine = TurnMachine(SpineJournal(spine, SpineIndex.scan(spine.path)), "t-open")
        machine.fire(
            "start", {"cause": "asked", "keys": [f"{heinzel}@rq-1"]}, key=f"{heinzel}@rq-1"
        )
        steps = {"gathered": "think", "thought": "outcome", "decided": "act"}
        for trigger in triggers:
            machine.fire(trigger, {"step": steps[trigger]})
    return "t-open"


class TestInbox:
    """Request files: written first, private, idempotent by request id."""

    def test_write_is_idempotent_and_private(self, service: Service, clock: SteppingClock) -> None:
        """The same request twice is one file (0600); another text under its id is HZH230."""
        inbox = Inbox(service.home, "hz-x")
        first = inbox.write("rq-1", "chat", "shorter please", at=clock())
        assert inbox.write("rq-1", "chat", "shorter please", at=clock()) == first
        assert stat.S_IMODE(inbox.path("rq-1").stat().st_mode) == 0o600
        assert first.hash.startswith("sha256:")
        with pytest.raises(HeinzelError) as caught:
            inbox.write("rq-1", "chat", "longer", at=clock())
        assert caught.value.code == "HZH230"

    def test_pending_take_and_prune(self, service: Service, clock: SteppingClock) -> None:
        """Taken requests leave pending; prune deletes only expired ones."""
        inbox = Inbox(service.home, "hz-x")
        inbox.write("rq-1", "chat", "a", at=clock())
        clock.step(days=10)
        inbox.write("rq-2", "stop", "", at=clock())
        assert [r.request_id for r in inbox.pending()] == ["rq-1", "rq-2"]
        inbox.take("rq-1", at=clock())
        assert [r.request_id for r in inbox.pending()] == ["rq-2"]
        assert inbox.prune(clock() + timedelta(days=5), 14) == ["rq-1.json"]
        assert inbox.prune(clock() + timedelta(days=5), 14) == []

    def test_bad_ids_and_files_are_coded(self, service: Service, clock: SteppingClock) -> None:
        """A bad id is HZH231, a garbled file HZH233, a bad kind HZH232."""
        inbox = Inbox(service.home, "hz-x")
        for call, code in (
            (lambda: inbox.write("../x", "chat", "a", at=clock()), "HZH231"),
            (lambda: inbox.write("rq-2", "shout", "a", at=clock()), "HZH232"),
        ):
            with pytest.raises(HeinzelError) as caught:
                call()
            assert caught.value.code == code
        inbox.write("rq-3", "chat", "a", at=clock())
        inbox.path("rq-3").write_text("{not json")
        with pytest.raises(HeinzelError) as caught:
            inbox.read("rq-3")
        assert caught.value.code == "HZH233"


class TestChat:
    """A message steers, queues or starts a turn, and is on disk before any of that."""

    def test_asleep_starts_an_asked_turn_keyed_by_the_request(
        self, tmp_path: Path, service: Service, recorder: Recorder, adapters: dict[str, object]
    ) -> None:
        """The new turn's key is <id>@<request id> and the text is in the inbox."""
        heinzel = approved(service, contract(tmp_path, "chatty", schedule=None))
        answer = Verbs(service, recorder, adapters).chat("chatty", "hello", request_id="rq-7")
        assert answer["delivered"] == "a new turn"
        assert [(w.cause, w.key) for w in recorder.calls[0][1]] == [("asked", f"{heinzel}@rq-7")]
        assert Inbox(service.home, heinzel).read("rq-7").message == "hello"  # type: ignore[union-attr]

    def test_a_running_turn_elsewhere_gets_it_through_the_inbox(
        self, tmp_path: Path, service: Service, recorder: Recorder, adapters: dict[str, object]
    ) -> None:
        """With the spine lock held, nothing is appended and the request waits."""
        heinzel = approved(service, contract(tmp_path, "busy", schedule=None))
        open_turn(service, heinzel, "gathered")
        before = service.home.spine_path(heinzel).read_bytes()
        with held(service, heinzel):
            answer = Verbs(service, recorder, adapters).chat("busy", "shorter")
        assert answer["delivered"] == "queued for the running turn"
        assert service.home.spine_path(heinzel).read_bytes() == before
        assert [r.message for r in Inbox(service.home, heinzel).pending("chat")] == ["shorter"]

    @pytest.mark.parametrize("triggers", [("gathered",), ("gathered", "thought", "decided")])
    def test_an_open_turn_a_dead_process_left_gets_it_through_the_inbox(
        self,
        tmp_path: Path,
        service: Service,
        recorder: Recorder,
        adapters: dict[str, object],
        triggers: tuple[str, ...],
    ) -> None:
        """In think or act alike: nothing is appended (no steer that no model request would
        follow), the request waits for the tick's recovery of that turn, and the answer
        says so without asking to send it again."""
        heinzel = approved(service, contract(tmp_path, "open", schedule=None))
        open_turn(service, heinzel, *triggers)
        before = service.home.spine_path(heinzel).read_bytes()
        answer = Verbs(service, recorder, adapters).chat("open", "shorter")
        assert service.home.spine_path(heinzel).read_bytes() == before
        assert answer["delivered"].startswith("queued: a turn a stopped process left is open")
        assert answer["turn"] == "t-open"
        pending = [r.request_id for r in Inbox(service.home, heinzel).pending()]
        assert pending == [answer["request_id"]]
        assert recorder.calls == []


class TestResumeStopRetry:
    """resume, stop and retry, and their coded refusals."""

    def test_resume_wakes_the_waiting_turn_as_asked(
        self, tmp_path: Path, service: Service, recorder: Recorder, adapters: dict[str, object]
    ) -> None:
        """No waiting turn is HZH236; a waiting one resumes with woken_by asked."""
        heinzel = approved(service, contract(tmp_path, "waiter", schedule=None))
        verbs = Verbs(service, recorder, adapters)
        with pytest.raises(HeinzelError) as caught:
            verbs.resume("waiter")
        assert caught.value.code == "HZH236"
        with service.open_spine(heinzel) as spine:
            machine = TurnMachine(SpineJournal(spine, SpineIndex.scan(spine.path)), "t-w")
            machine.fire(
                "start", {"cause": "asked", "keys": [f"{heinzel}@rq-1"]}, key=f"{heinzel}@rq-1"
            )
            machine.fire("wait", {"step": "gather", "until": "2026-11-30T00:00:00.000Z"})
        verbs.resume("waiter")
        assert recorder.resumed == [(heinzel, "t-w", "asked")]

    def test_stop_ends_an_open_turn_and_asks_a_running_one(
        self, tmp_path: Path, service: Service, recorder: Recorder, adapters: dict[str, object]
    ) -> None:
        """Running elsewhere: a stop request in the inbox; left open: abandoned stopped."""
        heinzel = approved(service, contract(tmp_path, "stopper", schedule=None))
        verbs = Verbs(service, recorder, adapters)
        with pytest.raises(HeinzelError) as caught:
            verbs.stop("stopper")
        assert caught.value.code == "HZH237"
        turn = open_turn(service, heinzel, "gathered")
        with held(service, heinzel):
            assert verbs.stop("stopper")["stop"].startswith("requested")
        assert [r.kind for r in Inbox(service.home, heinzel).pending()] == ["stop"]
        verbs.stop("stopper")
        [row] = service.show(heinzel)["turns"]
        assert (row["id"], row["disposition"], row["reason"]) == (turn, "abandoned", "stopped")

    def test_retry_forks_the_last_turn_with_the_hint(
        self, tmp_path: Path, service: Service, recorder: Recorder, adapters: dict[str, object]
    ) -> None:
        """No ended turn is HZH238; then the key names the request (the parent is given
        with it), and the parent is the last ended turn."""
        heinzel = approved(service, contract(tmp_path, "again", schedule=None))
        verbs = Verbs(service, recorder, adapters)
        with pytest.raises(HeinzelError) as caught:
            verbs.retry("again", "shorter")
        assert caught.value.code == "HZH238"
        verbs.chat("again", "draft it")
        answer = verbs.retry("again", "shorter", request_id="rq-9")
        assert (answer["key"], answer["parent"]) == (f"{heinzel}@retry:rq-9", "t-0001")
        assert Inbox(service.home, heinzel).read("rq-9").message == "shorter"  # type: ignore[union-attr]

    def test_a_retry_keyed_the_old_way_is_not_run_again(
        self, tmp_path: Path, service: Service, recorder: Recorder, adapters: dict[str, object]
    ) -> None:
        """A retry recorded under the old key ``<id>@retry:<parent>:<request id>`` (spines
        before the key named only the request): its request id sent again runs nothing."""
        heinzel = approved(service, contract(tmp_path, "again", schedule=None))
        verbs = Verbs(service, recorder, adapters)
        verbs.chat("again", "draft it")
        old = Wake("retry", f"{heinzel}@retry:t-0001:rq-old")
        [retried] = recorder.run_wakes(heinzel, [old], adapters=adapters)
        ran = recorder.count
        again = verbs.retry("again", "shorter", request_id="rq-old")
        assert recorder.count == ran
        assert again["delivered"] == "already delivered (its turn ran then; nothing ran again)"
        assert (again["turn"], again["key"]) == (retried.turn, old.key)


class TestApproveDraft:
    """hz approve of a local draft deletes its tag line, as the user would."""

    def test_approve_by_name_and_by_key(
        self,
        tmp_path: Path,
        service: Service,
        adapters: dict[str, object],
    ) -> None:
        """The tag line goes, the text stays, the adapter reads Approved; again: HZH073."""
        document = tmp_path / "report.md"
        document.write_text("# Report\n", encoding="utf-8")
        heinzel = approved(
            service,
            contract(
                tmp_path,
                "drafter",
                schedule=None,
                requires="documents:write",
                outputs="section: {asset: 'file:report.md'}",
            ),
        )
        docs = adapters["documents"]
        key = f"{heinzel}@v1@2026-10-30T14:00:00.000Z@file:{document}"
        tag = "🧝 DRAFT (drafter v1): edit, then delete this line to approve"
        digest = docs.place_draft(key, f"file:{document}", "Shipped.", tag)  # type: ignore[attr-defined]
        with service.open_spine(heinzel) as spine:
            spine.append(
                "draft.placed",
                {"asset": f"file:{document}", "output": "section", "hash": digest},
                turn="t-d",
                key=key,
            )
        assert service.drafts()[0]["key"] == key
        answer = service.approve("drafter")
        assert answer["approved"] == key
        assert "🧝" not in document.read_text(encoding="utf-8")
        state = docs.draft_state(key)  # type: ignore[attr-defined]
        assert isinstance(state, Approved)
        assert state.text == "Shipped."
        with pytest.raises(HeinzelError) as twice:  # one behaviour for approving twice
            service.approve(key)
        assert twice.value.code == "HZH073" and "already approved" in twice.value.message


class TestPrune:
    """Request files expire with the bodies."""

    def test_hz_heinzel_prune_deletes_expired_requests(
        self, tmp_path: Path, service: Service, clock: SteppingClock
    ) -> None:
        """A request older than retention_days goes; a fresh one stays."""
        heinzel = approved(service, contract(tmp_path, "old", schedule=None))
        inbox = Inbox(service.home, heinzel)
        inbox.write("rq-old", "chat", "long ago", at=clock())
        clock.step(days=100)
        inbox.write("rq-new", "chat", "today", at=clock())
        assert "rq-old.json" in service.prune()["removed"]
        assert [r.request_id for r in inbox.pending()] == ["rq-new"]
