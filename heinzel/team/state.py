"""The ``hz/state`` branch: receipts pushed, read back and linted.

Layout: ``<team id>/<YYYY-MM-DD>.jsonl``, one file per team Heinzelmännchen per day of
the receipt's time, a record a line. Why not a file per event: a month of 100 team
Heinzelmännchen ticking daily would be tens of thousands of tree entries, and every
commit rewrites the trees above the files it touches; a file per day keeps the tree at
one entry per Heinzelmännchen per day and the blob small. Why not one file per
Heinzelmännchen: it grows without end. Merges never merge text: a push that loses the
race (non-fast-forward, seen as a rejected ``--force-with-lease``) fetches the new tip,
rebuilds its commit on top of it by appending the receipts whose ids the files do not
hold yet, lints, and pushes again, up to ``[team] push_retries`` times; the lease makes
two writers of one Heinzelmännchen's file rare, and appends commute anyway.

Before every push the new receipts are linted (`heinzel.team.receipts.lint_record`) and
judged by the lease history as fetched (`heinzel.team.receipts.judge`): a receipt
written after a higher token was granted was made under a lease that had changed hands;
it is refused, kept in the outbox's ``refused/`` with its reason and reported (HZH303). Lines
already on the branch are never linted for a push: a line the lint refuses (a hostile
or broken one) is quarantined by the readers (`scan`, `lint_branch`), not counted for
slots or the token floor, and stops nobody's receipts.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping
from dataclasses import field
from datetime import datetime, timedelta
from typing import Any

from heinzel.errors import HeinzelError
from heinzel.team.git import STATE_REF, Git, declined_error, git_error
from heinzel.team.lease import Lease
from heinzel.team.outbox import Outbox
from heinzel.team.receipts import (
    Grant,
    Quarantined,
    history,
    judge,
    lint_record,
    lint_records,
    sort_records,
)
from heinzel.team.roster import ROSTER_PATH
from ledger.records import mutable_record

__all__ = ["PublishStats", "Scan", "last_receipts", "lint_branch", "own_dropped", "publish", "scan"]


@mutable_record
class PublishStats:
    """Counts for the bench and ``hz team status``."""

    pushes: int = 0  # receipt pushes that took
    conflicts: int = 0  # receipt pushes that lost a race and were retried
    lease_pushes: int = 0  # pushes of lease and claim changes (one per tick step at most)
    lease_conflicts: int = 0  # lease refs whose compare-and-swap was rejected
    refused: int = 0
    receipts: int = 0


def _path(record: dict[str, Any]) -> str:
    return f"{record['team']}/{str(record['at'])[:10]}.jsonl"


def publish(
    git: Git,
    outbox: Outbox,
    *,
    roster: set[str],
    grants: Mapping[str, Mapping[int, Grant]],
    retries: int,
    me: str,
    stats: PublishStats,
    again: frozenset[str] = frozenset(),
) -> None:
    """Push the outbox to ``hz/state`` in order, each receipt once (see the module);
    ``grants``: each team's lease history as fetched (`heinzel.team.receipts.history`);
    ``again``: ids of receipts
    ``hz/state`` held before a rewrite dropped them (pushed again without the token
    check: they passed it once). Only the new receipts are linted: a line already on
    the branch that the lint refuses is quarantined for the readers, never a reason to
    refuse this push."""
    refused: list[str] = []
    for _attempt in range(retries):
        pending = outbox.pending()
        if not pending:
            break
        tip = git.state_tip()
        contents: dict[str, str] = {}
        added: dict[str, list[str]] = {}
        done = []
        for path, record in pending:
            problems = lint_record(record, roster)
            if not problems and record.get("id") not in again:
                found = judge(record, grants.get(str(record.get("team")), {}))
                problems = [found] if found else []
            if problems:
                outbox.refuse(path, problems[0])
                refused.append(f"{path.name}: {problems[0]}")
                stats.refused += 1
                continue
            where = _path(record)
            if where not in contents:
                contents[where] = (git.read(tip, where) if tip else None) or ""
            line = json.dumps(record, sort_keys=True, separators=(",", ":"))
            if f'"id":"{record["id"]}"' not in contents[where] + "".join(added.get(where, [])):
                added.setdefault(where, []).append(line + "\n")
            done.append(path)
        if not added:
            for path in done:
                path.unlink(missing_ok=True)
            break
        files = {p: contents[p] + "".join(lines) for p, lines in added.items()}
        count = sum(len(lines) for lines in added.values())
        commit = git.state_commit(tip, files, f"hz: {count} receipts from {me}")
        pushed = git.push([(STATE_REF, commit, tip)])
        if STATE_REF in pushed.declined:
            raise declined_error(STATE_REF, pushed.declined[STATE_REF])
        if STATE_REF in pushed.accepted:
            stats.pushes += 1
            stats.receipts += count
            for path in done:
                path.unlink(missing_ok=True)
            git.track(commit)
            break
        stats.conflicts += 1
        git.fetch()
    else:
        raise git_error(f"hz/state moved under every one of {retries} pushes")
    if refused:
        raise HeinzelError(
            "HZH303",
            f"{len(refused)} receipt(s) refused before the push: {refused[0]}",
            "a stale token means another daemon took the lease; see docs/team.md",
        )


@mutable_record
class Scan:
    """What the recent files of ``hz/state`` say, the quarantined lines left out."""

    keys: dict[str, set[str]] = field(default_factory=dict)  # turn.finished keys per team
    tokens: dict[str, int] = field(default_factory=dict)  # highest admitted token per team
    quarantined: list[Quarantined] = field(default_factory=list)
    grants: dict[str, dict[int, Grant]] = field(default_factory=dict)  # lease history
    granted: set[tuple[str, int]] = field(default_factory=set)  # lease.granted lines


def scan(
    git: Git,
    teams: Iterable[str],
    now: datetime,
    roster: Iterable[str],
    ceilings: Mapping[str, int],
    *,
    leases: Mapping[str, Grant] | None = None,
    climb: Collection[str] = (),
    unsigned: Mapping[str, str] | None = None,
) -> Scan:
    """The files of the last eight days of each team id on the fetched ``hz/state``, in
    two git processes however many teams, sorted by `sort_records` (``ceilings``: each
    readable lease's token; ``leases``: each current lease as a grant): the keys of
    admitted ``turn.finished`` receipts, the highest admitted token, the quarantined
    lines and the lease history."""
    wanted = sorted(set(teams))
    found = Scan(keys={team: set() for team in wanted})
    found.grants = history((), leases)
    tip = git.state_tip()
    if tip is None or not wanted:
        return found
    days = [(now - timedelta(days=back)).date().isoformat() for back in range(8)]
    texts = git.read_many(tip, [f"{team}/{day}.jsonl" for team in wanted for day in days])
    lines = [
        (f"{path}:{n}", line)
        for path, text in sorted(texts.items())
        for n, line in enumerate(text.splitlines(), start=1)
    ]
    admitted, found.quarantined = sort_records(
        lines, roster, ceilings, leases, climb=climb, unsigned=unsigned
    )
    found.grants = history(admitted, leases)
    for record in admitted:
        if record.get("kind") == "lease.granted":
            found.granted.add((str(record.get("team")), int(record.get("token") or 0)))
        team = str(record.get("team"))
        found.tokens[team] = max(found.tokens.get(team, 0), int(record.get("token") or 0))
        if record.get("kind") == "turn.finished":
            found.keys.setdefault(team, set()).add(str(record.get("key")))
    return found


def own_dropped(git: Git, old: str, new: str | None, me: str, machine: str) -> list[dict[str, Any]]:
    """The receipts of this member's machine that ``old`` held and ``new`` (a rewrite of
    ``hz/state`` that does not descend from ``old``) lacks, in ``old``'s order."""
    kept = "".join(git.read_many(new, None).values()) if new else ""
    dropped = []
    for _path, text in sorted(git.read_many(old, None).items()):
        for line in text.splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if (
                isinstance(record, dict)
                and record.get("by") == me
                and record.get("machine") in (machine, None)
                and f'"id":"{record.get("id")}"' not in kept
            ):
                dropped.append(record)
    return dropped


def last_receipts(git: Git, teams: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Each team id's last receipt on the fetched ``hz/state`` (its newest day file's
    last line), in three git processes; no network."""
    wanted = sorted(set(teams))
    tip = git.state_tip()
    if tip is None or not wanted:
        return {}
    listed = git.run("ls-tree", "-r", "-z", "--name-only", tip, "--", *[f"{t}/" for t in wanted])
    newest: dict[str, str] = {}
    for path in filter(None, listed.stdout.split("\0")):
        team = path.split("/", 1)[0]
        newest[team] = max(newest.get(team, ""), path)
    found: dict[str, dict[str, Any]] = {}
    for path, text in git.read_many(tip, sorted(newest.values())).items():
        lines = text.splitlines()
        try:
            record = json.loads(lines[-1]) if lines else None
        except ValueError:
            continue
        if isinstance(record, dict):
            shown = ("kind", "key", "at", "by", "token", "disposition")
            found[path.split("/", 1)[0]] = {k: record[k] for k in shown if k in record}
    return found


def lint_branch(
    git: Git,
    roster: set[str],
    leases: dict[str, Lease | None],
    ceilings: Mapping[str, int],
    *,
    grants: Mapping[str, Grant] | None = None,
    climb: Collection[str] = (),
    unsigned: Mapping[str, str] | None = None,
) -> list[str]:
    """Every record on the fetched ``hz/state``, in branch order (`lint_records`, a
    token above its lease's refused as forged)."""
    tip = git.state_tip()
    if tip is None:
        return []
    lines: list[tuple[str, str]] = []
    for path, text in sorted(git.read_many(tip, None).items()):
        if path == ROSTER_PATH:
            continue  # the roster, checked by its signatures (`heinzel.team.roster`)
        lines += [(f"{path}:{n}", line) for n, line in enumerate(text.splitlines(), start=1)]
    problems = lint_records(lines, roster, ceilings, grants, climb=climb, unsigned=unsigned)
    for tid, lease in leases.items():
        if lease is not None and lease.holder not in roster:
            problems.append(f"lease {tid}: holder is not a roster handle")
    return problems
