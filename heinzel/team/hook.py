"""Server-side fencing: a ``pre-receive`` hook that lints every push to ``hz/state`` and
the lease refs on the git server itself (``hz team hook``, docs/team.md).

Clients already check their own receipts before a push; the hook makes the server refuse
what a stale, broken or hostile client pushes anyway:

- ``refs/hz/lease/<team id>``: never deleted; its message a lease (`Lease.from_message`)
  whose holder is a roster handle and whose token never goes down;
- ``refs/heads/hz/state``: never deleted or rewritten (the new tip descends from the
  old); every line it adds is a receipt the lint admits (`lint_record`, the roster),
  whose token is neither below its team's lease (a stale holder's) nor above it (no lease
  granted it).

The hook runs in the bare repository with git's quarantine environment (the pushed
objects are readable only through it), so it calls ``git`` with the environment it was
given, unlike `heinzel.team.git.Git`, which drives a mirror and drops every ``GIT_``
variable.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Iterable, Sequence

from heinzel.team.git import LEASE_PREFIX, STATE_REF
from heinzel.team.lease import Lease
from heinzel.team.receipts import lint_record

__all__ = ["check_push", "hook_script"]


def hook_script(python: str, roster: Iterable[str]) -> str:
    """The ``pre-receive`` hook: this Python's hz checks each push with ``roster``."""
    names = ",".join(sorted(set(roster)))
    return (
        "#!/bin/sh\n"
        "# hz team hook: refuses stale, forged or malformed pushes to hz/state and\n"
        "# refs/hz/lease/* (docs/team.md). Written by `hz team hook`; write it again\n"
        "# when the roster changes.\n"
        f"exec {shlex.quote(python)} -m heinzel team check-push --roster {shlex.quote(names)}\n"
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
        if len(parts) == 3 and parts[1] == "blob":
            found[path] = _git("cat-file", "blob", parts[2]).stdout
    return found


def check_push(updates: Sequence[tuple[str, str, str]], roster: Iterable[str]) -> list[str]:
    """What is wrong with a push of ``(old, new, ref)`` updates (empty: it may land)."""
    names = frozenset(roster)
    problems: list[str] = []
    tokens: dict[str, int] = {}
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
        tokens[tid] = lease.token
    for old, new, ref in updates:
        if ref != STATE_REF:
            continue
        if _absent(new):
            problems.append(f"{ref}: hz/state is never deleted")
            continue
        if not _absent(old) and _git("merge-base", "--is-ancestor", old, new).returncode != 0:
            problems.append(f"{ref}: hz/state is never rewritten (the push is not a fast-forward)")
            continue
        problems += _check_added(_texts(old), _texts(new), names, tokens)
    return problems


def _check_added(
    before: dict[str, str], after: dict[str, str], names: frozenset[str], tokens: dict[str, int]
) -> list[str]:
    problems: list[str] = []
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
            if found:
                problems.append(f"{where}: {found[0]}")
                continue
            team, token = str(record.get("team")), int(record.get("token") or 0)
            if team not in tokens:
                lease = _lease_at(LEASE_PREFIX + team)
                if lease is not None:
                    tokens[team] = lease.token
            lease_token = tokens.get(team)
            if lease_token is not None and token < lease_token:
                problems.append(
                    f"{where}: stale fencing token {token} (the lease's is {lease_token})"
                )
            elif lease_token is not None and token > lease_token:
                problems.append(f"{where}: token {token} above the lease's ({lease_token})")
    return problems
