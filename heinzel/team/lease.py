"""Leases: who runs a team Heinzelmännchen, as the ref ``refs/hz/lease/<team id>``.

The ref points at a commit with the empty tree whose message is the lease, one JSON
line: ``{"holder", "machine", "expiry", "token", "owner_seen", "open", "since"}`` (``since``:
when this token was granted, the lease history's entry; older leases lack it): the holder is a
member's handle *and* the machine id of its home (`heinzel.team.members.machine_id`), so
one person's laptop and desktop are two holders. It is changed only by
compare-and-swap (``git push --force-with-lease=<ref>:<old>``), so of two daemons that
read the same lease and write a new one, one wins and the other reads again.

The rule (ADR 0049 statement 13, owner then delegate), decided by `decide` from what one
daemon read, pure and tested alone:

- the owner's daemon takes the lease when it is absent, expired or released, and renews
  it (expiry = now + two tick intervals) every tick while it holds it;
- while a delegate holds it, the owner's daemon writes ``owner_seen`` (at most once an
  interval) and runs nothing;
- a named delegate's daemon takes it when it is absent, or expired (the owner's has not
  renewed within two intervals), and renews it until the owner is seen again; then it
  releases it (expiry = now) once it has no open turn of that Heinzelmännchen, and the
  owner takes it at its next tick;
- each change of holder raises the fencing token by one; a renewal keeps it, and so does
  a holder that takes back its own expired lease (nobody held it in between: the ref is
  only changed by compare-and-swap), unless a higher token was seen since (``floor``: a
  home that missed another holder's lease): then its lease waits until it expires and
  is taken with the next token above ``floor``;
- ``open`` lists the slot keys the holder claimed (pushed before their turns start) whose
  ``turn.finished`` receipts are not on ``hz/state`` yet (``unsettled``). Nobody takes a
  lease from another holder while it has unsettled claims, until ``grace`` past its
  expiry: the holder may have run those turns and not pushed their receipts yet (killed,
  then asleep), and running them again would run a slot twice. A holder renews its lease
  with only its unsettled claims, and does not release it while it has any.

Clock skew: an expiry is trusted ``max_skew`` past its time (a taker waits that much
longer), so daemons whose clocks differ by less than ``max_skew`` never both hold a lease;
docs/team.md says how to bound it (NTP) and what breaks past it.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Literal

from ledger.event import format_ts, parse_ts
from ledger.records import frozen_record

__all__ = ["Decision", "Lease", "decide", "owner_mark", "seen_only"]


@frozen_record
class Lease:
    """One lease as read from its ref."""

    holder: str
    expiry: str
    token: int
    owner_seen: str | None = None
    open: tuple[str, ...] = ()
    machine: str | None = None
    since: str | None = None

    def to_message(self) -> str:
        machine: dict[str, str] = {"machine": self.machine} if self.machine is not None else {}
        if self.since is not None:
            machine["since"] = self.since  # optional fields: written only when known
        return json.dumps(
            {
                "holder": self.holder,
                "expiry": self.expiry,
                "token": self.token,
                "owner_seen": self.owner_seen,
                "open": list(self.open),
                **machine,
            },
            sort_keys=True,
            separators=(",", ":"),
        )

    @classmethod
    def from_message(cls, message: str) -> Lease | None:
        try:
            data = json.loads(message)
            return cls(
                holder=str(data["holder"]),
                expiry=str(data["expiry"]),
                token=int(data["token"]),
                owner_seen=data.get("owner_seen"),
                open=tuple(str(key) for key in data.get("open") or ()),
                machine=str(data["machine"]) if data.get("machine") else None,
                since=str(data["since"]) if data.get("since") else None,
            )
        except (ValueError, KeyError, TypeError):
            return None

    def expired(self, now: datetime, skew: timedelta) -> bool:
        return now > parse_ts(self.expiry) + skew

    def overlong(self, now: datetime, interval: timedelta, skew: timedelta) -> bool:
        """An expiry further ahead than any holder writes (``now + 2 x interval +
        max_skew``): a hand-set or broken lease, treated as expired."""
        return parse_ts(self.expiry) > now + 2 * interval + skew

    def held_by(self, handle: str, machine: str | None) -> bool:
        """Whether ``handle`` on ``machine`` holds it: a holder is a member's machine, so
        one person's two machines are two holders. A lease written before leases named
        a machine is its handle's (the compare-and-swap decides between two of them)."""
        return self.holder == handle and (self.machine is None or self.machine == machine)


def seen_only(lease: Lease, before: Lease | None) -> bool:
    """Whether ``lease`` is ``before`` with only ``owner_seen`` changed: the owner's
    "seen" mark on a lease a delegate holds (`decide`'s ``seen``), which the owner signs
    and not the holder. Any member's key may sign one: it moves no token, holder, expiry
    or claim, and at worst makes the delegate hand back early (a wait, never a double)."""
    return before is not None and replace(lease, owner_seen=before.owner_seen) == before


def owner_mark(lease: Lease, before: Lease | None, signer: str, owner: str | None) -> bool:
    """Whether ``lease`` reads as the "seen" mark of the Heinzelmännchen's ``owner`` (its
    commit signed by ``signer``): the owner is the only writer of seen marks, and its
    daemon marks only a lease it honoured, so a home that missed the lease under it (a
    lease commit has no parent: a delegate's take and the mark fetched at once) honours
    the mark as it is. Only on another holder's lease, with ``owner_seen`` set, and never
    with a token below the last lease this home verified (``before``)."""
    return (
        owner is not None
        and signer == owner
        and lease.holder != owner
        and lease.owner_seen is not None
        and (before is None or lease.token >= before.token)
    )


@frozen_record
class Decision:
    """What a daemon does with one lease: write ``new`` (or nothing) and whether it may
    run the Heinzelmännchen's turns this tick (``runs``, only with the lease written)."""

    action: Literal["take", "renew", "seen", "release", "none"]
    new: Lease | None
    runs: bool


def decide(
    lease: Lease | None,
    *,
    me: str,
    owner: str | None,
    delegates: tuple[str, ...],
    now: datetime,
    interval: timedelta,
    skew: timedelta,
    busy: bool,
    unsettled: tuple[str, ...] = (),
    grace: timedelta = timedelta(days=1),
    machine: str | None = None,
    floor: int = 0,
) -> Decision:
    """The rule above for one daemon (``me`` on ``machine``) and one lease (``busy``:
    an open turn; ``unsettled``: the lease's claims without a receipt on ``hz/state``)."""
    expiry = format_ts(now + 2 * interval)
    at = format_ts(now)
    token = max(lease.token if lease is not None else 0, floor)
    free = lease is None or lease.expired(now, skew) or lease.overlong(now, interval, skew)
    mine = lease is not None and lease.held_by(me, machine)
    waiting = lease is not None and not lease.expired(now, skew + grace)
    if not mine and free and unsettled and waiting:
        return Decision("none", None, False)  # its holder may have run them: wait
    behind = lease is not None and mine and lease.token < floor
    if behind and not free:
        return Decision("none", None, False)  # a higher token was granted since: wait it out
    # someone held a higher token since this holder's (seen here, or on hz/state): taking
    # it back is a new grant, not its old token
    again = Lease(me, expiry, token + 1, open=unsettled, machine=machine, since=at)
    if me == owner:
        if lease is not None and mine:
            kept = replace(lease, expiry=expiry, owner_seen=None, open=unsettled, machine=machine)
            return Decision("take" if free else "renew", again if behind else kept, True)
        if free:
            return Decision("take", Lease(me, expiry, token + 1, machine=machine, since=at), True)
        if lease is not None and lease.holder == me:
            return Decision("none", None, False)  # my other machine holds it
        seen = lease.owner_seen if lease is not None else None
        if lease is not None and (seen is None or now - parse_ts(seen) >= interval):
            return Decision("seen", replace(lease, owner_seen=at), False)
        return Decision("none", None, False)
    if me not in delegates:
        return Decision("none", None, False)
    seen = lease.owner_seen if lease is not None else None
    back = owner is not None and seen is not None and now - parse_ts(seen) <= 2 * interval
    if lease is not None and mine and not free:
        if back and not busy and not unsettled:
            gone = format_ts(now - skew - timedelta(seconds=1))
            return Decision("release", replace(lease, expiry=gone, open=()), False)
        renewed = replace(lease, expiry=expiry, open=unsettled, machine=machine)
        return Decision("renew", renewed, True)
    if free and not back:
        if lease is not None and mine:
            taken = replace(lease, expiry=expiry, open=unsettled, machine=machine)
            return Decision("take", again if behind else taken, True)
        return Decision("take", Lease(me, expiry, token + 1, machine=machine, since=at), True)
    return Decision("none", None, False)
