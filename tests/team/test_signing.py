"""Signed hz/state commits (git's SSH signing) and a hook that refuses unsigned or
wrongly signed ones, with real `ssh-keygen` keys, through the `hz` executable against a
bare team repository (docs/team.md, "Signed hz/state")."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import timedelta
from pathlib import Path

from .test_hostile_state import MONDAY, TEAM, TUESDAY, _append, _forged, _git
from .test_two_machines import START, Machine, Two, finished_slots, ts


def _key(tmp_path: Path, machine: Machine, handle: str) -> Path:
    key = tmp_path / f"{handle}_key"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", handle, "-f", str(key)], check=True
    )
    with machine.config.open("a", encoding="utf-8") as config:
        config.write(f'signing_key = "{key}"\n')
    return key


def _push(remote: Path, scratch: Path, refspec: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(scratch), "push", str(remote), refspec],
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": os.environ["PATH"], "HOME": str(scratch)},
    )


def test_signed_commits_land_and_a_forger_without_the_key_is_refused(
    tmp_path: Path,
    two: Two,
) -> None:
    """Ana and Ben sign with their own keys (their lines from `hz team key` make the
    allowed-signers file the hook checks): every hz/state commit their daemons push is
    signed and lands. A forger with push access but no key (an unsigned commit), and Ben
    signing a line written as Ana's, are refused by the server, which names the reason."""
    remote, ana, ben = two
    _key(tmp_path, ana, "ana")
    ben_key = _key(tmp_path, ben, "ben")
    signers = tmp_path / "allowed_signers"
    lines = [m.hz(START, "team", "key").stdout for m in (ana, ben)]
    assert lines[0].startswith('ana namespaces="git" ssh-ed25519 ')
    signers.write_text("".join(lines), encoding="utf-8")
    doctor = json.loads(ana.hz(START, "system", "doctor", "--json", check=False).stdout)
    [check] = [c for c in doctor["checks"] if c["name"] == "team signing key"]
    assert check["ok"] and check["detail"] == lines[0].strip()
    ana.hz(START, "team", "hook", str(remote), "--allowed-signers", str(signers))

    ana.hz(START + timedelta(hours=12), "system", "daemon", "tick")
    ben.hz(START + timedelta(days=1, hours=12), "system", "daemon", "tick")
    assert finished_slots(remote) == [MONDAY, TUESDAY]
    statuses = _git(
        remote,
        "-c",
        f"gpg.ssh.allowedSignersFile={signers}",
        "log",
        "--format=%G?%x00%GS",
        "refs/heads/hz/state",
    ).splitlines()
    assert statuses and {s.split("\0")[0] for s in statuses} == {"G"}
    assert {s.split("\0")[1] for s in statuses} == {"ana", "ben"}

    scratch = tmp_path / "scratch.git"
    subprocess.run(["git", "clone", "-q", "--mirror", str(remote), str(scratch)], check=True)
    forged = _forged("ana", 2, f"{TEAM}@{TUESDAY}", ts(START + timedelta(days=1, hours=13)), 5)
    _append(scratch, f"{TEAM}/{TUESDAY[:10]}.jsonl", [forged])
    refused = _push(remote, scratch, "refs/heads/hz/state:refs/heads/hz/state")
    assert refused.returncode != 0 and "is not signed by a key of the allowed signers" in (
        refused.stderr
    )
    # Ben's own key, signing a line written as Ana's
    unsigned = _git(scratch, "rev-parse", "refs/heads/hz/state")
    tree = _git(scratch, "rev-parse", f"{unsigned}^{{tree}}")
    parent = _git(scratch, "rev-parse", f"{unsigned}^")
    signed = _git(
        scratch,
        "-c",
        "gpg.format=ssh",
        "-c",
        f"user.signingkey={ben_key}",
        "commit-tree",
        "-S",
        tree,
        "-p",
        parent,
        "-m",
        "hz: 1 receipts from ben",
    )
    refused = _push(remote, scratch, f"+{signed}:refs/heads/hz/state")
    assert refused.returncode != 0 and "a line by 'ana'" in refused.stderr
    assert "signed by 'ben'" in refused.stderr
    assert finished_slots(remote) == [MONDAY, TUESDAY]


def test_every_member_quarantines_a_line_not_signed_by_its_writer(tmp_path: Path, two: Two) -> None:
    """Without a hook: a forger with push access writes an unsigned `turn.finished` as
    Ana's for Tuesday's slot (a token her lease held then). With `[team]
    allowed_signers` set, Ana's and Ben's readers quarantine it ("not signed by its
    writer's key"), so it settles nothing: Ana runs Tuesday's slot."""
    remote, ana, ben = two
    signers = tmp_path / "allowed_signers"
    for machine, handle in ((ana, "ana"), (ben, "ben")):
        _key(tmp_path, machine, handle)
        with machine.config.open("a", encoding="utf-8") as config:
            config.write(f'allowed_signers = "{signers}"\n')
    signers.write_text("".join(m.hz(START, "team", "key").stdout for m in (ana, ben)))
    ana.hz(START + timedelta(hours=12), "system", "daemon", "tick")
    forged = _forged("ana", 1, f"{TEAM}@{TUESDAY}", ts(START + timedelta(days=1, hours=9)), 6)
    _append(remote, f"{TEAM}/{TUESDAY[:10]}.jsonl", [forged])
    tuesday = START + timedelta(days=1, hours=12)
    ana.hz(tuesday, "system", "daemon", "tick")
    assert sorted(ana.started()) == [MONDAY, TUESDAY]
    for machine in (ana, ben):
        lint = json.loads(machine.hz(tuesday, "team", "lint", "--json", check=False).stdout)
        [problem] = lint["problems"]
        assert "not signed by its writer's key" in problem and "rc-" not in problem[:3]
        status = json.loads(machine.hz(tuesday, "team", "status", "--json").stdout)
        assert [q["by"] for q in status["quarantined"]] == ["ana"]
