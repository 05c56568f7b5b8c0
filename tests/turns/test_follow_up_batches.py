"""Follow-up wakes handed over by the tick run as the tick would run them."""

from __future__ import annotations

from heinzel.store.inbox import Request, handed
from heinzel.turns.delivery import batches
from machines.keys import Wake


def test_each_approval_is_a_turn_of_its_own_before_the_rest() -> None:
    """Two approvals and two other wakes: the approvals first, one each, then the rest in one."""
    wakes = [
        Wake("schedule", "h@slot"),
        Wake("approval", "h@approval:a"),
        Wake("source-changed", "h@notes:f1"),
        Wake("approval", "h@approval:b"),
    ]
    assert batches(wakes) == [
        [Wake("approval", "h@approval:a")],
        [Wake("approval", "h@approval:b")],
        [Wake("schedule", "h@slot"), Wake("source-changed", "h@notes:f1")],
    ]
    assert batches([]) == []


def test_a_handed_request_reads_back_only_when_it_is_a_wake() -> None:
    """A requested request gives its cause and key; an unknown cause, a key without its
    Heinzelmännchen, or another kind gives None."""

    def request(kind: str, message: str) -> Request:
        return Request("rq-1", "h", kind, message, "2026-10-30T14:00:00.000Z", "sha256:x")

    assert handed(request("requested", '{"cause":"schedule","key":"h@s"}')) == ("schedule", "h@s")
    assert handed(request("requested", '{"cause":"dreaming","key":"h@s"}')) is None
    assert handed(request("requested", '{"cause":"schedule","key":"s"}')) is None
    assert handed(request("requested", "not json")) is None
    assert handed(request("chat", '{"cause":"schedule","key":"h@s"}')) is None
