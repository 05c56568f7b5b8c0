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
from .test_two_machines import START, finished_slots, team_of_two


def _push(remote: Path, scratch: Path, *refspecs: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(scratch), "push", str(remote), *refspecs],
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": os.environ["PATH"], "HOME": str(scratch)},
    )


def test_the_server_refuses_a_stale_receipt_a_lower_token_and_a_rewrite(tmp_path: Path) -> None:
    """With the hook installed on the bare repository, Ana's and Ben's daemons hand the
    Heinzelmännchen over as usual; then a push of a receipt under Ana's old token, a lease
    with a lower token, and a force-push of hz/state are each refused by the server,
    which names the reason."""
    remote, ana, ben = team_of_two(tmp_path)
    installed = ana.hz(START, "team", "hook", str(remote))
    assert "pre-receive" in installed.stdout
    assert os.access(remote / "hooks" / "pre-receive", os.X_OK)
    ana.hz(START + timedelta(hours=12), "system", "daemon", "tick")
    ben.hz(START + timedelta(days=1, hours=12), "system", "daemon", "tick")
    assert finished_slots(remote) == [MONDAY, TUESDAY]
    assert [lease["token"] for lease in _leases(remote)] == [2]

    scratch = tmp_path / "scratch.git"
    subprocess.run(["git", "clone", "-q", "--mirror", str(remote), str(scratch)], check=True)
    stale = _forged("ana", 1, f"{TEAM}@{TUESDAY}", TUESDAY, 7)
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
