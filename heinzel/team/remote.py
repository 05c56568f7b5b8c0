"""The remote as this home sees it: one fetch, by every path that fetches (a rewrite of
``hz/state`` announced and survived, the roster followed, the new lines verified), and
what the remote said, kept in ``<home>/team/remote.json`` for ``hz team status``: its
reachability, the last rewrite, the pushes the server's hook refused (HZH480)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from heinzel.errors import HeinzelError
from heinzel.team.git import LEASE_PREFIX, Git, declined_error
from heinzel.team.members import Report
from heinzel.team.state import own_dropped
from heinzel.team.trust import Trust
from ledger.event import format_ts
from ledger.files import ensure_private_dir, write_atomic

__all__ = ["Remote"]


class Remote(Trust):
    """The fetch and the remote's state of a home's `Team`."""

    __slots__ = ()

    def fetch(self, git: Git, notices: list[str]) -> None:
        """One fetch, by every path that fetches (the tick, ``hz team lint``): a fetched
        ``hz/state`` that does not descend from the one examined last (a force-push, a
        deletion) is announced once in ``notices`` and survived (`_rewritten`); whether
        the remote was reached, and since when not, is kept for ``hz team status``."""
        now = format_ts(self.sessions.clock())
        try:
            git.ensure()
            last = git.seen_state() or git.state_tip()
            git.fetch()
        except HeinzelError as error:
            known = self.remote_state()
            self._remote_state(
                unreachable_since=known.get("unreachable_since") or now, error=error.message
            )
            raise
        tip = git.state_tip()
        rewrite = None
        if last is not None and not git.descends(last, tip):
            rewrite = self._rewritten(git, last, notices)
        git.see_state(tip)
        self._follow_roster(git, tip, notices)
        self._verify(git, tip)
        self._remote_state(
            reached=now,
            unreachable_since=None,
            error=None,
            **({"rewrite": rewrite} if rewrite else {}),
        )

    def remote_state(self) -> dict[str, Any]:
        """What the last fetch found (``<home>/team/remote.json``): ``reached`` (the last
        time the remote answered), ``unreachable_since`` and its ``error``, the last
        ``rewrite`` and the hook's last ``declined`` pushes."""
        try:
            data = json.loads((self.root / "remote.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _remote_state(self, **changes: Any) -> None:
        data = {**self.remote_state(), **changes}
        ensure_private_dir(self.root)
        write_atomic(self.root / "remote.json", json.dumps(data, sort_keys=True).encode())

    def _rewritten(self, git: Git, last: str, notices: list[str]) -> dict[str, Any]:
        """``hz/state`` as fetched does not descend from the tip examined last (a
        force-push or a deletion rewrote it): say so, and put this machine's receipts the
        rewrite dropped back into the outbox (pushed again without the token check:
        they passed it once, and they count as what they were)."""
        tip = git.state_tip()
        dropped = own_dropped(git, last, tip, self.me, self.machine)
        notices.append(
            f"team: hz/state was rewritten: {(tip or 'deleted')[:12]} does not descend from "
            f"{last[:12]} fetched last; {len(dropped)} receipt(s) of this machine it dropped "
            "are pushed again. Protect hz/state from force-push and deletion (docs/team.md)"
        )
        if dropped:
            outbox = self.outbox
            waiting = {str(record.get("id")) for _, record in outbox.pending()}
            outbox.set_again(outbox.again() | {str(r.get("id")) for r in dropped})
            outbox.put([r for r in dropped if str(r.get("id")) not in waiting])
        return {
            "at": format_ts(self.sessions.clock()),
            "from": last,
            "to": tip,
            "dropped": len(dropped),
        }

    def _declined(self, declined: Mapping[str, str], report: Report) -> None:
        """Pushes the server's hook refused (`heinzel.team.hook`) reach the person: each
        is the tick's error (HZH480) with the hook's reason and how to fix it, and is kept
        for ``hz team status`` until a push of that ref takes."""
        names = {m.team: m.name for m in self.members.values()}
        kept = {
            d["ref"]: d
            for d in self.remote_state().get("declined") or []
            if isinstance(d, dict) and d.get("ref") not in declined
        }
        for ref, reason in sorted(declined.items()):
            error = declined_error(ref, reason, names.get(ref.removeprefix(LEASE_PREFIX)))
            report.errors.append({"id": "team", "code": error.code, "message": error.message})
            report.notices.append(f"team: {error.message}; fix: {error.hint}")
            kept[ref] = {
                "ref": ref,
                "reason": reason,
                "message": error.message,
                "hint": error.hint,
                "at": format_ts(self.sessions.clock()),
            }
        self._remote_state(declined=list(kept.values()))

    def _taken(self, refs: Iterable[str]) -> None:
        """Refs a push just landed: the hook's refusals of them are over."""
        known = self.remote_state().get("declined") or []
        kept = [d for d in known if isinstance(d, dict) and d.get("ref") not in set(refs)]
        if kept != known:
            self._remote_state(declined=kept)
