"""`hz team hook`: the git server itself refuses a stale, forged or rewriting push to
hz/state and the lease refs, while the daemons' own pushes land."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import timedelta
from pathlib import Path

from .test_claims import _leases
from .test_hostile_state import MONDAY, TEAM, TUESDAY, _append, _forged, _git
from .test_two_machines import START, Two, finished_slots, ts


def _push(remote: Path, scratch: Path, *refspecs: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(scratch), "push", str(remote), *refspecs],
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": os.environ["PATH"], "HOME": str(scratch)},
    )


def test_the_server_refuses_a_stale_receipt_a_lower_token_and_a_rewrite(
    tmp_path: Path,
    two: Two,
) -> None:
    """With the hook installed on the bare repository, Ana's and Ben's daemons hand the
    Heinzelmännchen over as usual; then a push of a receipt under Ana's old token, a lease
    with a lower token, and a force-push of hz/state are each refused by the server,
    which names the reason."""
    remote, ana, ben = two
    installed = ana.hz(START, "team", "hook", str(remote))
    assert "pre-receive" in installed.stdout
    assert os.access(remote / "hooks" / "pre-receive", os.X_OK)
    ana.hz(START + timedelta(hours=12), "system", "daemon", "tick")
    ben.hz(START + timedelta(days=1, hours=12), "system", "daemon", "tick")
    assert finished_slots(remote) == [MONDAY, TUESDAY]
    assert [lease["token"] for lease in _leases(remote)] == [2]

    scratch = tmp_path / "scratch.git"
    subprocess.run(["git", "clone", "-q", "--mirror", str(remote), str(scratch)], check=True)
    # written under Ana's token 1 after Ben took token 2 (Tuesday 12:00): a stale holder's
    stale = _forged("ana", 1, f"{TEAM}@{TUESDAY}", ts(START + timedelta(days=1, hours=13)), 7)
    _append(scratch, f"{TEAM}/{TUESDAY[:10]}.jsonl", [stale])
    refused = _push(remote, scratch, "refs/heads/hz/state:refs/heads/hz/state")
    assert refused.returncode != 0 and "stale fencing token 1" in refused.stderr
    assert finished_slots(remote) == [MONDAY, TUESDAY]

    lease = _git(scratch, "rev-parse", f"refs/hz/lease/{TEAM}")
    message = json.loads(_git(scratch, "log", "-1", "--format=%B", lease))
    tree = _git(scratch, "hash-object", "-t", "tree", "-w", "--stdin", stdin="")
    lower = _git(scratch, "commit-tree", tree, "-m", json.dumps({**message, "token": 1}))
    refused = _push(remote, scratch, f"+{lower}:refs/hz/lease/{TEAM}")
    assert refused.returncode != 0 and "token 1 below the lease's 2" in refused.stderr

    root = _git(scratch, "commit-tree", tree, "-m", "x")
    refused = _push(remote, scratch, f"+{root}:refs/heads/hz/state")
    assert refused.returncode != 0 and "never rewritten" in refused.stderr
    assert finished_slots(remote) == [MONDAY, TUESDAY]
    printed = ana.hz(START, "team", "hook")
    assert printed.stdout.startswith("#!/bin/sh") and "check-push --roster" in printed.stdout


def test_the_server_refuses_a_hand_set_lease_to_2099_and_a_token_jump(
    tmp_path: Path,
    two: Two,
) -> None:
    """A lease pushed by hand whose expiry runs to 2099, or whose token jumps from the
    lease's past the next one, is refused by the hook, which names the reason; the
    daemons' own takes and renewals land."""
    remote, ana, ben = two
    ana.hz(START, "team", "hook", str(remote))
    ana.hz(START + timedelta(hours=12), "system", "daemon", "tick")
    [held] = _leases(remote)
    scratch = tmp_path / "scratch.git"
    subprocess.run(["git", "clone", "-q", "--mirror", str(remote), str(scratch)], check=True)
    tree = _git(scratch, "hash-object", "-t", "tree", "-w", "--stdin", stdin="")
    env = {"HZ_NOW": ts(START + timedelta(hours=13))}
    for forged, reason in (
        ({**held, "expiry": "2099-01-01T00:00:00Z"}, "further ahead than a holder writes"),
        ({**held, "token": 50, "holder": "ben"}, "token 50 jumps past 2"),
    ):
        commit = _git(scratch, "commit-tree", tree, "-m", json.dumps(forged))
        refused = subprocess.run(
            ["git", "-C", str(scratch), "push", str(remote), f"+{commit}:refs/hz/lease/{TEAM}"],
            capture_output=True,
            text=True,
            check=False,
            env={"PATH": os.environ["PATH"], "HOME": str(scratch), **env},
        )
        assert refused.returncode != 0 and reason in refused.stderr
    assert _leases(remote) == [held]
    ben.hz(START + timedelta(days=1, hours=12), "system", "daemon", "tick")
    assert [lease["token"] for lease in _leases(remote)] == [2]
    assert finished_slots(remote)[-1].startswith(ts(START + timedelta(days=1))[:10])


def test_a_forged_token_the_server_never_took_does_not_make_later_receipts_stale(
    tmp_path: Path,
    two: Two,
) -> None:
    """A turn.finished with token 999 written straight into the repository (past the
    hook) is quarantined by the members; the hook must not read it as a grant either:
    Ana's receipts of Tuesday, under her real token, land (the soak found every later
    receipt of that Heinzelmännchen refused as stale)."""
    remote, ana, _ben = two
    ana.hz(START, "team", "hook", str(remote))
    ana.hz(START + timedelta(hours=12), "system", "daemon", "tick")
    _append(
        remote,
        f"{TEAM}/{MONDAY[:10]}.jsonl",
        [_forged("ben", 999, f"{TEAM}@{MONDAY}", ts(START + timedelta(hours=13)), 1)],
    )
    done = ana.hz(START + timedelta(days=1, hours=12), "system", "daemon", "tick", "--json")
    errors = json.loads(done.stdout).get("errors") or []
    assert not [e for e in errors if e.get("code") == "HZH480"], errors
    assert TUESDAY in finished_slots(remote)
