"""Receipts out: the receipt-grade events a tick appended to the local team
Heinzelmännchen's spines, copied into the outbox with their fencing tokens and inputs'
fingerprints (`_collect`), and the outbox pushed to ``hz/state``
(`heinzel.team.state.publish`, `_flush`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from heinzel.errors import HeinzelError
from heinzel.session.sessions import Sessions
from heinzel.team.git import STATE_REF
from heinzel.team.members import Report
from heinzel.team.placement import lease_grants
from heinzel.team.receipts import from_event, held_at
from heinzel.team.remote import Remote
from heinzel.team.state import publish
from ledger.bodies import Bodies
from ledger.errors import LedgerError
from ledger.event import Event, format_ts, parse_ts
from ledger.spine import read_events
from machines.stores.disk_body import DiskBody
from machines.stores.journal import expand_carried

__all__ = ["Pushing"]

_FINAL = ("turn.finished", "turn.skipped", "turn.failed", "turn.abandoned")
_RECEIPT_KINDS = (
    *_FINAL,
    "turn.started",
    "draft.placed",
    "approval.observed",
    "contract.approved",
    "contract.amended",
    "step.started",
)


class Pushing(Remote):
    """The receipts a home's `Team` collects and pushes."""

    __slots__ = ()

    def _collect(self) -> None:
        outbox = self.outbox
        cursor = outbox.cursor()
        records: list[dict[str, Any]] = []
        moved = dict(cursor)
        for member in self.members.values():
            path = self.sessions.home.spine_path(member.local)
            if not path.exists():
                continue
            after = cursor.get(member.local, 0)
            started: dict[str, dict[str, Any]] = {}
            drafts: dict[str, str] = {}
            versions: dict[int, str] = {}
            for event, carried in _expanded(read_events(path)):  # a line may carry events
                if event.kind not in _RECEIPT_KINDS:
                    continue
                if event.kind == "turn.started" and event.turn:
                    started[event.turn] = {**event.data, "key": event.key}
                if event.kind == "step.started" and event.turn in started:
                    if event.data.get("step") == "think" and event.data.get("input"):
                        started[event.turn]["gathered"] = str(event.data["input"])
                    continue
                if event.kind in ("contract.approved", "contract.amended"):
                    versions[int(event.data.get("version") or 0)] = str(
                        event.data.get("fingerprint") or ""
                    )
                if event.seq <= after:
                    continue
                if event.kind == "draft.placed" and event.turn:
                    drafts[event.turn] = str(event.data.get("hash") or "")
                begun = started.get(event.turn or "", {})
                if event.kind in _FINAL and event.turn and begun.get("gathered"):
                    inputs = _input_fps(self.sessions, member.local, event.turn, begun)
                    begun = {**begun, "inputs": inputs}
                token = begun.get("fencing")
                moved[member.local] = event.seq
                if (
                    event.kind in _FINAL
                    and event.data.get("reason") == "superseded"
                    and self.held.get(member.team) != token
                ):
                    continue  # ended because another holder runs it: nothing to say
                late = event.kind in ("approval.observed", "contract.approved", "contract.amended")
                if late and not isinstance(token, int):
                    # collected whenever this daemon ticks: the token this machine held
                    # at its time, else none (a person's act needs no lease)
                    token = self._held_at(member.team, event.ts)
                if not isinstance(token, int) and member.team not in self.held:
                    continue  # not a team turn of ours, and we do not run it now
                record = from_event(
                    event,
                    local_id=member.local,
                    team=member.team,
                    by=self.me,
                    machine=self.machine,
                    token=int(token) if isinstance(token, int) else self.held.get(member.team, 0),
                    started=begun,
                    contract_fp=_ran_under(begun, versions) or member.fingerprint,
                    draft_hash=drafts.get(event.turn or "") or None,
                    carried=carried,
                )
                if record is not None and not (
                    record["kind"] == "turn.finished" and begun.get("cause") == "created"
                ):
                    records.append(record)
        outbox.put(records)
        outbox.advance(moved)

    def _held_at(self, team: str, ts: str) -> int:
        """The token this machine held for ``team`` at ``ts`` by the lease history, else 0."""
        try:
            grant = held_at(self.grants.get(team, {}), format_ts(parse_ts(ts)))
        except ValueError:
            return 0
        if grant is None or grant.holder != self.me or grant.machine not in (None, self.machine):
            return 0
        return grant.token

    def _flush(self, report: Report) -> None:
        if not self.online or not self.outbox.pending():
            return
        current = lease_grants({t: lease for t, (_, lease) in self.leases.items()})
        grants = {t: dict(g) for t, g in self.grants.items()}
        for tid, grant in current.items():
            grants.setdefault(tid, {})[grant.token] = grant
        try:
            publish(
                self.git,
                self.outbox,
                roster=self.roster(),
                grants=grants,
                retries=self.sessions.settings.team.push_retries,
                me=self.me,
                stats=self.stats,
                again=self.outbox.again(),
            )
        except HeinzelError as error:
            report.errors.append({"id": "team", "code": error.code, "message": error.message})
            if error.code == "HZH480":
                report.notices.append(f"team: {error.message}; fix: {error.hint}")
                self._remote_state(
                    declined=[
                        *[
                            d
                            for d in self.remote_state().get("declined") or []
                            if isinstance(d, dict) and d.get("ref") != STATE_REF
                        ],
                        {
                            "ref": STATE_REF,
                            "reason": error.message,
                            "message": error.message,
                            "hint": error.hint,
                            "at": format_ts(self.sessions.clock()),
                        },
                    ]
                )
        else:
            self._taken([STATE_REF])
        if not self.outbox.pending() and self.outbox.again():
            self.outbox.set_again(frozenset())  # every receipt to push again has left


def _input_fps(
    sessions: Sessions, local: str, turn: str, started: dict[str, Any]
) -> dict[str, str]:
    """``{input name: fingerprint}`` of what a turn's gather read: the spine carries only
    the hash of the gather's result (``step.started{step: think, input}``), the result
    itself (each staged input with its ``fingerprint``) is in the turn's body. Empty when
    the body is gone (pruned)."""
    try:
        gathered = DiskBody(Bodies(sessions.home.session_dir(local))).get(
            turn, str(started["gathered"])
        )
    except (KeyError, OSError, ValueError, LedgerError):
        return {}
    items = gathered.get("inputs") if isinstance(gathered, dict) else None
    return {
        str(i.get("name")): str(i["fingerprint"])
        for i in items or ()
        if isinstance(i, dict) and i.get("fingerprint")
    }


def _ran_under(started: dict[str, Any], versions: dict[int, str]) -> str | None:
    """The fingerprint of the contract version a turn's ``turn.started`` pinned."""
    pins = started.get("pins")
    version = pins.get("contract_version") if isinstance(pins, dict) else None
    return versions.get(int(version)) or None if isinstance(version, int) else None


def _expanded(lines: Iterable[Event]) -> Iterator[tuple[Event, bool]]:
    """Each event of ``lines`` with what a line carries written out before it
    (`machines.stores.journal.expand_carried`), and whether it is such a carried event (it
    shares its carrier's seq, so its receipt is named by its kind too)."""
    for line in lines:
        events = list(expand_carried((line,)))
        for n, event in enumerate(events):
            yield event, n < len(events) - 1
