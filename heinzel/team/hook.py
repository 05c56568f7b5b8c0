"""Server-side fencing: a ``pre-receive`` hook that lints every push to ``hz/state`` and
the lease refs on the git server itself (``hz team hook``, docs/team.md).

Clients already check their own receipts before a push; the hook makes the server refuse
what a stale, broken or hostile client pushes anyway:

- ``refs/hz/lease/<team id>``: never deleted; its message a lease (`Lease.from_message`)
  whose holder is a roster handle, whose token never goes down, rises by at most one
  (a take) and never passes to another holder (handle or machine) unraised, and whose
  expiry is no further ahead than a holder writes (``--lease-max``: two intervals and
  ``max_skew``, from the installing member's config);
- ``refs/heads/hz/state``: never deleted or rewritten (the new tip descends from the
  old); every line it adds is a receipt the lint admits (`lint_record`, the roster),
  whose token is not above its team's lease (no lease granted it) and was held by its
  writer at its ``at`` by the lease history (`heinzel.team.receipts.judge`: a stale
  holder's receipt is refused, an earlier holder's late one is not).

The hook runs in the bare repository with git's quarantine environment (the pushed
objects are readable only through it), so it calls ``git`` with the environment it was
given, unlike `heinzel.team.git.Git`, which drives a mirror and drops every ``GIT_``
variable.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

from heinzel.team.git import LEASE_PREFIX, STATE_REF
from heinzel.team.lease import Lease, seen_only
from heinzel.team.receipts import Grant, history, judge, lint_record, misplaced
from heinzel.team.roster import ROSTER_PATH, Roster, parse
from ledger.event import parse_ts

__all__ = ["check_push", "hook_script"]


def hook_script(
    python: str,
    roster: Iterable[str],
    lease_max: timedelta | None = None,
    allowed_signers: str | None = None,
) -> str:
    """The ``pre-receive`` hook: this Python's hz checks each push with ``roster`` (and
    ``lease_max``: how far ahead a lease's expiry may be; ``allowed_signers``: the file
    whose keys must sign every ``hz/state`` commit)."""
    names = ",".join(sorted(set(roster)))
    most = f" --lease-max {int(lease_max.total_seconds())}" if lease_max else ""
    if allowed_signers:
        most += f" --allowed-signers {shlex.quote(allowed_signers)}"
    return (
        "#!/bin/sh\n"
        "# hz team hook: refuses stale, forged or malformed pushes to hz/state and\n"
        "# refs/hz/lease/* (docs/team.md). Written by `hz team hook`; write it again\n"
        "# when the roster changes.\n"
        f"exec {shlex.quote(python)} -m heinzel team check-push --roster {shlex.quote(names)}"
        f"{most}\n"
    )


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=False)


def _absent(sha: str) -> bool:
    return not sha.strip("0")


def _lease_at(commit: str) -> Lease | None:
    done = _git("log", "-1", "--format=%B", commit)
    return Lease.from_message(done.stdout.strip()) if done.returncode == 0 else None


def _texts(commit: str) -> dict[str, str]:
    """Each file of ``commit``'s tree, as text."""
    if _absent(commit):
        return {}
    listed = _git("ls-tree", "-r", "-z", commit).stdout
    found: dict[str, str] = {}
    for entry in filter(None, listed.split("\0")):
        head, _, path = entry.partition("\t")
        parts = head.split()
        if len(parts) == 3 and parts[1] == "blob" and path != ROSTER_PATH:
            found[path] = _git("cat-file", "blob", parts[2]).stdout
    return found


def _roster_at(commit: str) -> Roster | None:
    """The roster ``commit`` of ``hz/state`` holds (None: none, or not one)."""
    done = _git("cat-file", "blob", f"{commit}:{ROSTER_PATH}")
    if done.returncode != 0:
        return None
    try:
        return parse(done.stdout)
    except ValueError:
        return None


def _verify(commit: str, signers: str) -> tuple[str, str]:
    """``(status, signer)`` of ``commit`` checked against the allowed-signers text."""
    with tempfile.NamedTemporaryFile("w", suffix=".signers") as file:
        file.write(signers)
        file.flush()
        done = _git(
            "-c",
            f"gpg.ssh.allowedSignersFile={file.name}",
            "log",
            "-1",
            "--format=%G?%x00%GS",
            commit,
        )
    status, _, signer = done.stdout.strip().partition("\0")
    return status or "N", signer


def check_push(
    updates: Sequence[tuple[str, str, str]],
    roster: Iterable[str],
    *,
    now: datetime | None = None,
    lease_max: timedelta | None = None,
    allowed_signers: str | None = None,
) -> list[str]:
    """What is wrong with a push of ``(old, new, ref)`` updates (empty: it may land);
    ``lease_max``: how far past ``now`` a lease's expiry may be; ``allowed_signers``:
    every new ``hz/state`` commit must be signed by a key of that file, and each line it
    adds written ``by`` that key's handle (`_signed`). Once ``hz/state`` holds a roster
    (`heinzel.team.roster`), its handles join ``roster``, its keys are the allowed
    signers, a change of it must be signed by its owner, and a lease commit by its
    holder's key."""
    base = _roster_at(STATE_REF)
    names = frozenset(roster) | (base.handles() if base else set())
    problems: list[str] = []
    tokens: dict[str, int] = {}
    leases: dict[str, Grant] = {}
    for old, new, ref in updates:
        if not ref.startswith(LEASE_PREFIX):
            continue
        tid = ref.removeprefix(LEASE_PREFIX)
        if _absent(new):
            problems.append(f"{ref}: a lease ref is never deleted")
            continue
        lease = _lease_at(new)
        if lease is None:
            problems.append(f"{ref}: not a lease record")
            continue
        before = None if _absent(old) else _lease_at(old)
        if lease.holder not in names:
            problems.append(f"{ref}: holder {lease.holder[:40]!r} is not a roster handle")
        if before is not None and lease.token < before.token:
            problems.append(f"{ref}: token {lease.token} below the lease's {before.token}")
        if before is not None and lease.token == before.token and _another(lease, before):
            problems.append(
                f"{ref}: token {lease.token} is {before.holder[:40]}'s on "
                f"{(before.machine or 'an unnamed machine')[:40]}, not {lease.holder[:40]}'s "
                f"on {(lease.machine or 'an unnamed machine')[:40]} (a take raises it by one)"
            )
        if before is not None and lease.token > before.token + 1:
            problems.append(
                f"{ref}: token {lease.token} jumps past {before.token + 1} "
                "(a take raises it by one)"
            )
        if lease_max is not None and now is not None and _beyond(lease.expiry, now + lease_max):
            problems.append(
                f"{ref}: expiry {lease.expiry[:40]} is further ahead than a holder writes "
                "(two intervals and max_skew)"
            )
        if base is not None:
            status, signer = _verify(new, base.allowed_signers())
            if status != "G" or (signer != lease.holder and not seen_only(lease, before)):
                problems.append(
                    f"{ref}: the lease commit is not signed by {lease.holder[:40]}'s key on "
                    f"the roster (signature {status}{', by ' + repr(signer) if signer else ''})"
                )
        tokens[tid] = lease.token
        if lease.since:
            leases[tid] = Grant(lease.token, lease.holder, lease.machine, lease.since)
    for old, new, ref in updates:
        if ref != STATE_REF:
            continue
        if _absent(new):
            problems.append(f"{ref}: hz/state is never deleted")
            continue
        if not _absent(old) and _git("merge-base", "--is-ancestor", old, new).returncode != 0:
            problems.append(f"{ref}: hz/state is never rewritten (the push is not a fast-forward)")
            continue
        problems += _check_added(_texts(old), _texts(new), names, tokens, leases)
        problems += _signed(old, new, allowed_signers, base)
    return problems


def _roster_change(commit: str, current: Roster | None, allowed: str | None) -> str | None:
    """Why ``commit``'s change of the roster may not land (None: it may): a change must
    be signed by the owner of the roster before it; the first roster by its own owner's
    key (and, with ``allowed``, by a key of that file too)."""
    done = _git("cat-file", "blob", f"{commit}:{ROSTER_PATH}")
    if done.returncode != 0:
        return "the roster is never deleted"
    try:
        new = parse(done.stdout)
    except ValueError as error:
        return f"not a roster: {error}"
    if current is None:
        status, signer = _verify(commit, new.allowed_signers(only=new.owner))
        if status != "G" or signer != new.owner:
            return f"the first roster is not signed by its owner {new.owner}'s key"
        if allowed is not None and _verify(commit, _read(allowed))[0] != "G":
            return "the first roster is not signed by a key of the hook's allowed signers"
        return None
    status, signer = _verify(commit, current.allowed_signers())
    if status != "G" or signer != current.owner:
        by = f"signed by {signer[:40]!r}" if signer else "unsigned or signed by an unknown key"
        return f"changed by a commit {by}, not by the roster's owner {current.owner} (HZH482)"
    return None


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as file:
            return file.read()
    except OSError:
        return ""


def _signed(old: str, new: str, allowed: str | None, roster: Roster | None) -> list[str]:
    """Each commit ``old..new`` adds to ``hz/state``, oldest first: a change of the
    roster signed by the owner of the roster before it (`_roster_change`); and, once
    there is a roster (its keys) or with ``allowed`` (an allowed-signers file), signed
    (git's SSH signing) by one of those keys, every line it adds written ``by`` that
    key's handle."""
    span = new if _absent(old) else f"{old}..{new}"
    listed = _git("log", "--reverse", "--topo-order", "--format=%H%x00%P", span)
    problems: list[str] = []
    current = roster
    for row in listed.stdout.splitlines():
        commit, parents = [*row.split("\0"), ""][:2]
        parent = parents.split()[0] if parents.split() else None
        mine = _git("rev-parse", "--verify", "--quiet", f"{commit}:{ROSTER_PATH}").stdout
        theirs = (
            _git("rev-parse", "--verify", "--quiet", f"{parent}:{ROSTER_PATH}").stdout
            if parent
            else ""
        )
        if mine.strip() != theirs.strip():
            refused = _roster_change(commit, current, allowed)
            if refused is not None:
                problems.append(f"{ROSTER_PATH} in commit {commit[:12]}: {refused}")
                continue
            current = _roster_at(commit)
        if current is not None:
            signers = current.allowed_signers()
        elif allowed is not None:
            signers = _read(allowed)
        else:
            continue  # no roster and no allowed signers: signing is optional
        status, signer = _verify(commit, signers)
        if status != "G":
            problems.append(
                f"commit {commit[:12]} is not signed by a key of the allowed signers "
                f"(signature status {status or 'none'})"
            )
            continue
        before = _texts(parent or "0" * 40)
        for path, text in sorted(_texts(commit).items()):
            kept = set(before.get(path, "").splitlines())
            for line in text.splitlines():
                if line in kept:
                    continue
                try:
                    by = json.loads(line).get("by")
                except (ValueError, AttributeError):
                    continue
                if by != signer:
                    problems.append(
                        f"{path}: a line by {str(by)[:40]!r} in commit {commit[:12]} signed by "
                        f"{signer[:40]!r}"
                    )
    return problems


def _another(lease: Lease, before: Lease) -> bool:
    """Whether ``lease`` names another holder than ``before``: another handle, or another
    machine of it (a lease without a machine, as an hz before machines writes, is its
    handle's)."""
    if lease.holder != before.holder:
        return True
    return None not in (lease.machine, before.machine) and lease.machine != before.machine


def _beyond(expiry: str, most: datetime) -> bool:
    try:
        return parse_ts(expiry) > most
    except ValueError:
        return True


def _check_added(
    before: dict[str, str],
    after: dict[str, str],
    names: frozenset[str],
    tokens: dict[str, int],
    leases: dict[str, Grant],
) -> list[str]:
    problems: list[str] = []
    records = []
    for text in after.values():
        for line in text.splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and not lint_record(record, names):
                records.append(record)
    for team in {str(r.get("team")) for r in records} - set(leases):
        lease = _lease_at(LEASE_PREFIX + team)
        if lease is not None and lease.since:
            leases[team] = Grant(lease.token, lease.holder, lease.machine, lease.since)
    for team in {str(r.get("team")) for r in records} - set(tokens):
        lease = _lease_at(LEASE_PREFIX + team)
        if lease is not None:
            tokens[team] = lease.token
    # a line whose token no lease granted (above its lease's, as a forger wrote straight
    # into the repository) is quarantined by every member: it must not enter the history
    # and make every later receipt of that team stale
    grants = history(
        [r for r in records if int(r.get("token") or 0) <= tokens.get(str(r.get("team")), 1 << 62)],
        leases,
    )
    for path, text in sorted(after.items()):
        kept = set(before.get(path, "").splitlines())
        for number, line in enumerate(text.splitlines(), start=1):
            if line in kept:
                continue
            where = f"{path}:{number}"
            try:
                record = json.loads(line)
            except ValueError:
                problems.append(f"{where}: not JSON")
                continue
            found = lint_record(record, names)
            if not found and (wrong := misplaced(path, record)):
                found = [wrong]
            if found:
                problems.append(f"{where}: {found[0]}")
                continue
            team, token = str(record.get("team")), int(record.get("token") or 0)
            if team not in tokens:
                lease = _lease_at(LEASE_PREFIX + team)
                if lease is not None:
                    tokens[team] = lease.token
            lease_token = tokens.get(team)
            if lease_token is not None and token > lease_token:
                problems.append(f"{where}: token {token} above the lease's ({lease_token})")
            elif (judged := judge(record, grants.get(team, {}))) is not None:
                problems.append(f"{where}: {judged}")
    return problems
