"""The receipts' lint and the lease rule, without a repository."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

from heinzel.team.lease import Lease, decide
from heinzel.team.push import _expanded
from heinzel.team.receipts import (
    Grant,
    from_event,
    grant_record,
    lint_record,
    lint_records,
    team_id,
    team_key,
)
from ledger.event import make_event

NOW = datetime(2026, 10, 28, 9, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)
SKEW = timedelta(seconds=30)
TEAM = team_id("daily-digest")


def receipt(**more: object) -> dict[str, object]:
    return {
        "id": "rc-0123456789abcdef01234567",
        "kind": "turn.finished",
        "team": TEAM,
        "at": "2026-10-28T09:10:00.000Z",
        "by": "ana",
        "token": 1,
        "key": f"{TEAM}@2026-10-28T09:00:00.000Z",
        "cause": "schedule",
        "disposition": "drafted",
        "cost_usd": 0.31,
        "contract_fp": "sha256:" + "a" * 64,
        "input_fps": ["sha256:" + "b" * 64],
        "draft_hash": None,
        **more,
    }


class TestLint:
    """The lint admits ids, hashes, numbers, timestamps and handles, and nothing else."""

    def test_a_receipt_of_ids_and_hashes_passes(self) -> None:
        """A turn.finished with exactly statement 13's fields is clean."""
        assert lint_record(receipt(), {"ana", "ben"}) == []

    def test_a_field_outside_the_allowlist_is_refused(self) -> None:
        """A report line, even a short one, may not leave the machine."""
        assert lint_record(receipt(report="drafted the section"), {"ana"}) != []

    def test_free_text_and_email_are_refused(self) -> None:
        """Text in an allowed field and an address are both refused."""
        assert lint_record(receipt(cause="Priya's secret plan"), {"ana"}) != []
        assert lint_record(receipt(by="ana@acme.example"), {"ana"}) != []
        assert lint_record(receipt(disposition="ana@acme.example"), {"ana"}) != []

    def test_a_handle_not_on_the_roster_is_refused(self) -> None:
        """``by`` must be a roster handle."""
        assert lint_record(receipt(by="mallory"), {"ana", "ben"}) != []

    def test_a_key_the_lint_would_refuse_leaves_hashed(self) -> None:
        """A slot key keeps its slot; a draft's key (its place) and an approval's (too
        long) leave as the team id and a hash, which the lint admits."""
        local = "hz-01M66J1KQ0TCBH6V2DSFEVY68C"
        slot = team_key(f"{local}@2026-10-28T09:00:00.000Z", local, TEAM)
        assert slot == f"{TEAM}@2026-10-28T09:00:00.000Z"
        placed = f"{local}@v1@2026-10-28T09:00:00.000Z@file:/home/ana/notes.md"
        draft = team_key(placed, local, TEAM)
        approval = team_key(f"{local}@approval:section:sha256:{'c' * 64}", local, TEAM)
        for key in (draft, approval):
            assert key.startswith(f"{TEAM}@sha256:")
            assert lint_record(receipt(key=key), {"ana"}) == []
        assert "notes.md" not in draft

    def test_a_receipt_is_judged_by_the_lease_it_was_written_under(self) -> None:
        """Whatever the branch order: Ana's token-1 receipt written before Ben was
        granted token 2 counts; one written after it is stale; a token-2 receipt by
        someone other than its grantee is refused."""
        import json

        granted = grant_record(TEAM, Grant(2, "ben", None, "2026-10-28T11:45:00.000Z"))
        before = receipt(token=1, at="2026-10-28T09:10:00.000Z")
        after = receipt(token=1, at="2026-10-28T12:00:00.000Z", id="rc-" + "1" * 24)
        thief = receipt(token=2, at="2026-10-28T12:10:00.000Z", id="rc-" + "2" * 24)
        for order in (1, -1):
            lines = [(f"a:{n}", json.dumps(r)) for n, r in enumerate([granted, before][::order])]
            assert lint_records(lines, {"ana", "ben"}) == []
            lines = [(f"a:{n}", json.dumps(r)) for n, r in enumerate([granted, after][::order])]
            [problem] = lint_records(lines, {"ana", "ben"})
            assert "stale fencing token 1" in problem
        lines = [(f"a:{n}", json.dumps(r)) for n, r in enumerate([granted, thief])]
        [problem] = lint_records(lines, {"ana", "ben"})
        assert "granted to ben, not to ana" in problem


class TestLeaseRule:
    """Owner then delegate, with a fencing token that rises with each new holder."""

    def test_the_owner_takes_an_absent_lease_and_renews_it(self) -> None:
        """Token 1 on the first take; a renewal keeps it and moves the expiry."""
        first = decide(
            None,
            me="ana",
            owner="ana",
            delegates=("ben",),
            now=NOW,
            interval=HOUR,
            skew=SKEW,
            busy=False,
        )
        assert (first.action, first.runs, first.new and first.new.token) == ("take", True, 1)
        assert first.new is not None
        again = decide(
            first.new,
            me="ana",
            owner="ana",
            delegates=("ben",),
            now=NOW + HOUR,
            interval=HOUR,
            skew=SKEW,
            busy=False,
        )
        assert (again.action, again.new and again.new.token) == ("renew", 1)

    def test_a_delegate_waits_two_intervals_then_takes_over(self) -> None:
        """Within two intervals (and the skew) the delegate runs nothing; after, it takes."""
        held = Lease("ana", "2026-10-28T11:00:00.000Z", 1)
        early = decide(
            held,
            me="ben",
            owner="ana",
            delegates=("ben",),
            now=NOW + 2 * HOUR,
            interval=HOUR,
            skew=SKEW,
            busy=False,
        )
        assert (early.action, early.runs) == ("none", False)
        late = decide(
            held,
            me="ben",
            owner="ana",
            delegates=("ben",),
            now=NOW + 2 * HOUR + 2 * SKEW,
            interval=HOUR,
            skew=SKEW,
            busy=False,
        )
        assert (late.action, late.runs, late.new and late.new.token) == ("take", True, 2)

    def test_the_delegate_hands_back_once_the_owner_is_seen_and_it_is_idle(self) -> None:
        """owner_seen fresh: busy keeps it, idle releases it, then the owner takes it."""
        held = Lease("ben", "2026-10-28T11:00:00.000Z", 2, owner_seen="2026-10-28T09:00:00.000Z")
        busy = decide(
            held,
            me="ben",
            owner="ana",
            delegates=("ben",),
            now=NOW,
            interval=HOUR,
            skew=SKEW,
            busy=True,
        )
        assert busy.action == "renew"
        idle = decide(
            held,
            me="ben",
            owner="ana",
            delegates=("ben",),
            now=NOW,
            interval=HOUR,
            skew=SKEW,
            busy=False,
        )
        assert idle.action == "release" and idle.new is not None
        back = decide(
            idle.new,
            me="ana",
            owner="ana",
            delegates=("ben",),
            now=NOW,
            interval=HOUR,
            skew=SKEW,
            busy=False,
        )
        assert (back.action, back.new and back.new.token) == ("take", 3)

    def test_someone_neither_owner_nor_delegate_never_runs_it(self) -> None:
        """A member not named runs nothing, even with no lease at all."""
        found = decide(
            None,
            me="cleo",
            owner="ana",
            delegates=("ben",),
            now=NOW,
            interval=HOUR,
            skew=SKEW,
            busy=False,
        )
        assert (found.action, found.runs) == ("none", False)


class TestUnsettled:
    """A lease whose holder claimed a slot it has no receipt for is not taken over."""

    def test_a_delegate_waits_for_unsettled_claims_until_the_grace_ends(self) -> None:
        """Expired, with an open claim lacking a receipt: the delegate waits; a day
        later it takes it with the next token and no claims."""
        lease = Lease("ana", "2026-10-28T06:00:00.000Z", 3, open=(f"{TEAM}@slot",))
        args = {"me": "ben", "owner": "ana", "delegates": ("ben",), "interval": HOUR}
        waiting = decide(lease, now=NOW, skew=SKEW, busy=False, unsettled=lease.open, **args)
        assert waiting.action == "none" and not waiting.runs
        later = NOW + timedelta(days=1)
        taken = decide(lease, now=later, skew=SKEW, busy=False, unsettled=lease.open, **args)
        assert taken.action == "take" and taken.new is not None
        assert (taken.new.token, taken.new.open) == (4, ())
        settled = decide(lease, now=NOW, skew=SKEW, busy=False, unsettled=(), **args)
        assert settled.action == "take"

    def test_the_holder_takes_back_its_own_lease_with_the_same_token(self) -> None:
        """The owner back after a lapse nobody filled keeps its token, so its late
        receipts are not stale, and keeps only its unsettled claims."""
        lease = Lease("ana", "2026-10-28T06:00:00.000Z", 3, open=("a", "b"))
        back = decide(
            lease,
            me="ana",
            owner="ana",
            delegates=("ben",),
            now=NOW,
            interval=HOUR,
            skew=SKEW,
            busy=False,
            unsettled=("b",),
        )
        assert back.runs and back.new is not None
        assert (back.new.token, back.new.open) == (3, ("b",))
        assert Lease.from_message(back.new.to_message()) == back.new


class TestMachines:
    """A holder is a member's machine: the same handle on another machine is another
    holder."""

    def test_my_other_machine_holding_the_lease_is_not_me(self) -> None:
        """Ana's desktop neither renews nor marks a lease her laptop holds, and takes it
        with the next token once it expired; a lease without a machine (written before
        leases named one) is still its handle's."""
        held = Lease("ana", "2026-10-28T10:00:00.000Z", 3, machine="mc-" + "1" * 20)
        args = dict(me="ana", owner="ana", delegates=("ben",), interval=HOUR, skew=SKEW)
        desk = "mc-" + "2" * 20
        assert decide(held, now=NOW, busy=False, machine=desk, **args).action == "none"
        assert decide(held, now=NOW, busy=False, machine="mc-" + "1" * 20, **args).runs
        later = decide(held, now=NOW + 3 * HOUR, busy=False, machine=desk, **args)
        assert later.action == "take" and later.new is not None
        assert (later.new.token, later.new.machine) == (4, desk)
        legacy = Lease("ana", "2026-10-28T10:00:00.000Z", 3)
        assert decide(legacy, now=NOW, busy=False, machine=desk, **args).action == "renew"
        assert Lease.from_message(later.new.to_message()) == later.new

    def test_a_receipt_names_its_machine_and_the_lint_admits_it(self) -> None:
        """``machine`` is an envelope field holding an id."""
        assert lint_record(receipt(machine="mc-" + "a" * 20), {"ana"}) == []
        assert lint_record(receipt(machine="Ana's laptop"), {"ana"}) != []


def test_an_approval_leaves_its_output_fp_and_no_text() -> None:
    """``approval.observed`` leaves as the approver, the share changed and the approved
    text's material fingerprint (``output_fp``, from the spine's ``approved_fp``), and the
    lint admits it: what the team graph and a reader's wake go by (docs/graph.md)."""
    from heinzel.team.receipts import from_event
    from ledger.event import Event

    local = "hz-01M66J1KQ0TCBH6V2DSFEVY68C"
    fp = "sha256:" + "ab" * 32
    event = Event(
        seq=9,
        ts="2026-11-02T08:00:00.000Z",
        prev=None,
        turn="tn-01M66J8Y30H57AN72Y6937JX4G",
        kind="approval.observed",
        key=f"{local}@approval:section:{'cd' * 32}",
        data={"approver": "ana", "share_changed": 0.2, "approved_fp": fp, "draft_key": "k"},
    )
    record = from_event(event, local_id=local, team=TEAM, by="ana", token=1)
    assert record is not None
    assert (record["kind"], record["output_fp"], record["approver"]) == (
        "approval.observed",
        fp,
        "ana",
    )
    assert "draft_key" not in record
    assert lint_record(record, {"ana"}) == []


def test_a_draft_carried_by_its_turns_end_gets_a_receipt_of_its_own() -> None:
    """``draft.placed`` carried by ``turn.finished`` (docs/spine.md) shares its seq: the
    two receipts still have different ids, and a line of its own keeps its old id."""
    key = "hz-01J@v1@slot@file:/w/r.md"
    end = {"hash": "sha256:aa", "draft.placed": {"asset": "file:/w/r.md", "output": "s"}}
    carrier = make_event(
        seq=8,
        ts="2026-10-30T15:00:00.000Z",
        prev=None,
        kind="turn.finished",
        data={"disposition": "drafted", "usd": 0.0, "duration_ms": 0, "done": {key: end}},
        turn="tn-1",
        key=None,
    )
    made = {
        event.kind: from_event(
            event, local_id="hz-01J", team="t", by="me", token=1, carried=carried
        )
        for event, carried in _expanded([carrier])
    }
    assert made["effect.done"] is None  # not receipt-grade
    placed, finished = made["draft.placed"], made["turn.finished"]
    assert placed is not None and finished is not None
    assert placed["key"] == team_key(key, "hz-01J", "t") and placed["hash"]
    assert placed["id"] != finished["id"]
    old = "rc-" + hashlib.sha256(b"hz-01J:8").hexdigest()[:24]  # a line of its own's id
    assert finished["id"] == old
