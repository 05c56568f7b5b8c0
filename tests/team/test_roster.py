"""The roster on hz/state (roster.toml), changed only by commits its owner signs, signed
lease commits, and signing required once there is a roster: with real `ssh-keygen`
keys, through the `hz` executable against a bare team repository (docs/team.md, "The
roster on hz/state")."""

from __future__ import annotations

import json
import subprocess
from datetime import timedelta
from pathlib import Path

from heinzel.team.roster import parse

from .test_claims import _leases, _set_lease
from .test_hostile_state import MONDAY, TEAM, TUESDAY, _git
from .test_signing import _key, _push
from .test_two_machines import START, Machine, Two, finished_slots


def _pub(tmp_path: Path, handle: str) -> Path:
    """A key pair of someone without a machine here; its public key's path."""
    key = tmp_path / f"{handle}_key"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", handle, "-f", str(key)], check=True
    )
    return key.with_suffix(".pub")


def _roster_commit(repo: Path, add: str, pub: Path, key: Path) -> str:
    """A commit over the repository's hz/state whose roster.toml adds ``add`` with the
    key ``pub`` as owner's, signed with ``key`` (not the owner's): a member's forgery."""
    tip = _git(repo, "rev-parse", "refs/heads/hz/state")
    text = _git(repo, "show", f"{tip}:roster.toml") + "\n"
    key_text = " ".join(pub.read_text(encoding="utf-8").split()[:2])
    text += f'\n[members.{add}]\nrole = "member"\nkeys = ["{key_text}"]\n'
    parse(text)  # a well-formed roster: refused only for its signature
    index = {"GIT_INDEX_FILE": str(repo / "forged.index")}
    _git(repo, "read-tree", tip, **index)
    blob = _git(repo, "hash-object", "-w", "--stdin", stdin=text)
    _git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},roster.toml", **index)
    tree = _git(repo, "write-tree", **index)
    return _git(
        repo,
        "-c",
        "gpg.format=ssh",
        "-c",
        f"user.signingkey={key}",
        "commit-tree",
        "-S",
        tree,
        "-p",
        tip,
        "-m",
        f"hz: roster: add {add}",
    )


def _signed_team(tmp_path: Path, two: Two) -> tuple[Path, Machine, Machine, Path]:
    """Ana (owner) and Ben, each with a key; Ana starts the roster with Ben on it."""
    remote, ana, ben = two
    _key(tmp_path, ana, "ana")
    ben_key = _key(tmp_path, ben, "ben")
    added = ana.hz(START, "team", "roster", "add", "ben", str(ben_key.with_suffix(".pub")))
    assert "owner ana" in added.stdout
    return remote, ana, ben, ben_key


def _members(machine: Machine) -> dict[str, str]:
    shown = json.loads(machine.hz(START, "team", "roster", "--json").stdout)
    return {m["handle"]: m["role"] for m in shown["members"]}


def test_a_roster_change_not_signed_by_the_owner_is_refused_and_the_owners_is_taken(
    tmp_path: Path,
    two: Two,
) -> None:
    """Ben, a member with push access and his own key, adds Eve to roster.toml in a
    commit he signs. Ana's tick says so (HZH482) and keeps the roster before it; Ana's
    and Ben's `hz team lint` refuse it and `hz team status` names it; Eve stays off the
    roster. Ana's own change (adding Cara) is taken by Ben's next fetch, and Ben cannot
    change the roster through hz either (HZH486)."""
    remote, ana, ben, ben_key = _signed_team(tmp_path, two)
    assert _members(ana) == {"ana": "owner", "ben": "member"}
    ana.hz(START + timedelta(hours=12), "system", "daemon", "tick")
    eve = _pub(tmp_path, "eve")
    forged = _roster_commit(remote, "eve", eve, ben_key)
    _git(remote, "update-ref", "refs/heads/hz/state", forged)

    tuesday = START + timedelta(days=1, hours=12)
    report = json.loads(ana.hz(tuesday, "system", "daemon", "tick", "--json").stdout)
    [said] = [n for n in report["notices"] if "HZH482" in n]
    assert forged[:12] in said and "not by the owner ana" in said and "signed by 'ben'" in said
    assert _members(ana) == {"ana": "owner", "ben": "member"}
    assert finished_slots(remote) == [MONDAY, TUESDAY]
    for machine in (ana, ben):
        lint = machine.hz(tuesday, "team", "lint", "--json", check=False)
        assert lint.returncode == 1
        problems = json.loads(lint.stdout)["problems"]
        assert any("HZH482" in p and forged[:12] in p for p in problems)
        shown = machine.hz(tuesday, "team", "status").stdout
        assert "roster change refused (HZH482)" in shown and "owner ana" in shown
    assert "eve" not in _members(ben)

    cara = _pub(tmp_path, "cara")
    ana.hz(tuesday, "team", "roster", "add", "cara", str(cara))
    ben.hz(tuesday + timedelta(hours=1), "team", "lint", check=False)  # fetches
    assert _members(ben) == {"ana": "owner", "ben": "member", "cara": "member"}
    status = json.loads(ben.hz(tuesday, "team", "status", "--json").stdout)["roster"]
    assert [r["commit"] for r in status["refused"]] == [forged]
    refused = ben.hz(tuesday, "team", "roster", "add", "dan", str(cara), check=False)
    assert refused.returncode == 1 and "HZH486" in refused.stderr
    assert "only the roster's owner ana" in refused.stderr


def test_the_hook_refuses_a_roster_change_not_signed_by_the_owner_and_a_forged_lease(
    tmp_path: Path,
    two: Two,
) -> None:
    """With `hz team hook` installed (no allowed-signers file: the roster on hz/state
    names the keys), every hz/state and lease commit Ana's daemon pushes is signed and
    lands; Ben's roster change signed with his key, and an unsigned lease take in Ben's
    name, are refused by the server, naming why; Ana's roster change lands."""
    remote, ana, _ben, ben_key = _signed_team(tmp_path, two)
    ana.hz(START, "team", "hook", str(remote))
    ana.hz(START + timedelta(hours=12), "system", "daemon", "tick")
    assert finished_slots(remote) == [MONDAY]
    signers = tmp_path / "derived_signers"
    signers.write_text(
        "".join(
            f'{h} namespaces="git" {" ".join(k.read_text().split()[:2])}\n'
            for h, k in (("ana", tmp_path / "ana_key.pub"), ("ben", ben_key.with_suffix(".pub")))
        )
    )
    lease_ref = f"refs/hz/lease/{TEAM}"
    for ref in ("refs/heads/hz/state", lease_ref):
        status = _git(
            remote, "-c", f"gpg.ssh.allowedSignersFile={signers}", "log", "--format=%G?%GS", ref
        )
        assert set(status.splitlines()) == {"Gana"}

    scratch = tmp_path / "scratch.git"
    subprocess.run(["git", "clone", "-q", "--mirror", str(remote), str(scratch)], check=True)
    forged = _roster_commit(scratch, "eve", _pub(tmp_path, "eve"), ben_key)
    refused = _push(remote, scratch, f"{forged}:refs/heads/hz/state")
    assert refused.returncode != 0
    assert "roster.toml in commit" in refused.stderr and "not by the roster's owner ana" in (
        refused.stderr
    )
    [lease] = _leases(remote)
    taken = {**lease, "holder": "ben", "token": int(str(lease["token"])) + 1}
    _set_lease(scratch, TEAM, taken)
    refused = _push(remote, scratch, f"+{lease_ref}:{lease_ref}")
    assert refused.returncode != 0 and "not signed by ben's key on the roster" in refused.stderr
    assert _leases(remote) == [lease]

    ana.hz(START + timedelta(hours=13), "team", "roster", "add", "cara", str(_pub(tmp_path, "c")))
    assert "cara" in _git(remote, "show", "refs/heads/hz/state:roster.toml")


def test_a_forged_lease_take_is_not_honoured(tmp_path: Path, two: Two) -> None:
    """Without a hook, a forger with push access writes the lease as taken by Ben (token
    2, unsigned) while Ana holds it. Nobody honours it: Ben's daemon runs nothing and Ana's
    keeps her lease (both say why, HZH485), writes it over signed and runs Tuesday's slot."""
    remote, ana, ben, _ = _signed_team(tmp_path, two)
    for machine, hours in ((ana, 12), (ben, 13), (ana, 32), (ben, 32.5)):
        machine.hz(START + timedelta(hours=hours), "system", "daemon", "tick")
    [lease] = _leases(remote)
    assert lease["holder"] == "ana" and lease["token"] == 1
    _set_lease(remote, TEAM, {**lease, "holder": "ben", "token": 2, "machine": None})
    tuesday = START + timedelta(days=1, hours=10)
    shown = ben.hz(tuesday, "system", "daemon", "tick", "--json")
    assert any("HZH485" in n for n in json.loads(shown.stdout)["notices"])
    status = json.loads(ben.hz(tuesday, "team", "status", "--json").stdout)
    assert [row["state"] for row in status["leases"]] == ["unsigned"]
    [row] = json.loads(ben.hz(tuesday, "heinzel", "list", "--namespace", "team", "--json").stdout)
    assert row["team"]["holder"] == "ana"
    asked = ben.hz(tuesday, "heinzel", "wake", "daily-digest", check=False)
    assert asked.returncode == 1 and "HZH304" in asked.stderr and "held by ana" in asked.stderr
    report = json.loads(ana.hz(tuesday, "system", "daemon", "tick", "--json").stdout)
    assert any("HZH485" in n and "not honoured" in n for n in report["notices"])
    [now] = _leases(remote)
    assert (now["holder"], now["token"]) == ("ana", 1)
    ben.hz(tuesday + timedelta(hours=1), "system", "daemon", "tick")
    assert ben.started() == []
    assert sorted(ana.started()) == [MONDAY, TUESDAY]
    assert finished_slots(remote) == [MONDAY, TUESDAY]


def test_a_team_on_config_allowed_signers_moves_to_the_roster_and_signing_is_required(
    tmp_path: Path,
    two: Two,
) -> None:
    """Migration: a team that verifies with `[team] allowed_signers` keeps working as
    before (Monday runs, signed). Once Ana starts the roster on hz/state it is what every
    member verifies with; Ben, whose config lost its signing key, is refused with how to
    set one (HZH483) and pushes nothing until he does; then his receipts leave."""
    remote, ana, ben = two
    signers = tmp_path / "allowed_signers"
    for machine, handle in ((ana, "ana"), (ben, "ben")):
        _key(tmp_path, machine, handle)
        with machine.config.open("a", encoding="utf-8") as config:
            config.write(f'allowed_signers = "{signers}"\n')
    signers.write_text("".join(m.hz(START, "team", "key").stdout for m in (ana, ben)))
    ana.hz(START + timedelta(hours=12), "system", "daemon", "tick")
    assert finished_slots(remote) == [MONDAY]
    assert json.loads(ana.hz(START, "team", "roster", "--json").stdout)["owner"] is None

    ana.hz(
        START + timedelta(hours=13), "team", "roster", "add", "ben", str(tmp_path / "ben_key.pub")
    )
    config = ben.config.read_text(encoding="utf-8")
    ben.config.write_text(
        "\n".join(line for line in config.splitlines() if "signing_key" not in line) + "\n"
    )
    tuesday = START + timedelta(days=1, hours=12)
    ticked = ben.hz(tuesday, "system", "daemon", "tick", check=False)
    assert "HZH483" in ticked.stdout + ticked.stderr
    report = json.loads(ben.hz(tuesday, "system", "daemon", "tick", "--json", check=False).stdout)
    [said] = [n for n in report["notices"] if "HZH483" in n]
    assert "signing_key" in said and "ssh-keygen" in said and "hz team roster add ben" in said
    assert "`hz team key`" in said
    shown = ben.hz(tuesday, "team", "status").stdout
    assert "HZH483" in shown and "fix:" in shown
    doctor = json.loads(ben.hz(tuesday, "system", "doctor", "--json", check=False).stdout)
    [check] = [c for c in doctor["checks"] if c["name"] == "team signing key"]
    assert not check["ok"] and check["code"] == "HZH483"
    pending = json.loads(ben.hz(tuesday, "team", "status", "--json").stdout)["outbox"]
    assert pending > 0  # his approval's receipt waits

    ana.hz(tuesday, "system", "daemon", "tick")
    assert finished_slots(remote) == [MONDAY, TUESDAY]
    with ben.config.open("a", encoding="utf-8") as file:
        file.write(f'signing_key = "{tmp_path / "ben_key"}"\n')
    ben.hz(tuesday + timedelta(hours=1), "system", "daemon", "tick")
    assert json.loads(ben.hz(tuesday, "team", "status", "--json").stdout)["outbox"] == 0
    lint = json.loads(ana.hz(tuesday + timedelta(hours=2), "team", "lint", "--json").stdout)
    assert lint == {"ok": True, "problems": []}


def test_a_team_that_never_signed_keeps_its_history_when_the_roster_starts(
    tmp_path: Path,
    two: Two,
) -> None:
    """Migration without any signing before: Monday's receipts are unsigned. Once Ana
    starts the roster, the lines before its first commit are not held to its keys (not
    quarantined, they still settle Monday); every line after it is. A force-push back
    to Monday that drops the roster does not switch signing off (HZH482)."""
    remote, ana, ben = two
    ana.hz(START + timedelta(hours=12), "system", "daemon", "tick")
    monday = _git(remote, "rev-parse", "refs/heads/hz/state")
    _key(tmp_path, ana, "ana")
    ben_key = _key(tmp_path, ben, "ben")
    ana.hz(START + timedelta(hours=13), "team", "roster", "add", "ben", str(ben_key) + ".pub")
    tuesday = START + timedelta(days=1, hours=12)
    ana.hz(tuesday, "system", "daemon", "tick")
    assert finished_slots(remote) == [MONDAY, TUESDAY]
    for machine in (ana, ben):
        lint = json.loads(machine.hz(tuesday, "team", "lint", "--json").stdout)
        assert lint == {"ok": True, "problems": []}
    _git(remote, "update-ref", "refs/heads/hz/state", monday)
    report = json.loads(ben.hz(tuesday, "system", "daemon", "tick", "--json").stdout)
    assert any("HZH482" in n and "dropped the roster" in n for n in report["notices"])
    assert json.loads(ben.hz(tuesday, "team", "roster", "--json").stdout)["owner"] == "ana"


def test_the_owners_seen_mark_on_a_delegates_lease_lands_and_is_honoured_under_the_roster(
    tmp_path: Path,
    two: Two,
) -> None:
    """With the roster and the hook: Ana (owner) is away on Monday, Ben takes the lease
    and runs the slot. Ana comes back: her daemon marks the lease "owner seen", a lease
    commit she signs that changes nothing else; the hook lets it land (not HZH480) and
    Ben honours it (no HZH485) and hands back; Ana takes it and runs Tuesday's slot.
    (The soak found every such mark refused: a lease commit had to be its holder's.)"""
    remote, ana, ben, _ = _signed_team(tmp_path, two)
    ana.hz(START, "team", "hook", str(remote))
    said: list[str] = []

    def tick(machine: Machine, hours: int) -> None:
        done = machine.hz(START + timedelta(hours=hours), "system", "daemon", "tick", "--json")
        report = json.loads(done.stdout)
        said.extend(str(e) for e in report.get("errors") or [])
        said.extend(report.get("notices") or [])

    tick(ben, 12)
    assert finished_slots(remote) == [MONDAY]
    for machine, hours in ((ana, 13), (ben, 14), (ana, 15), (ana, 24 + 12), (ben, 24 + 13)):
        tick(machine, hours)
    assert not [s for s in said if "HZH480" in s or "HZH485" in s], said
    lease = json.loads(ben.hz(START + timedelta(hours=37), "team", "status", "--json").stdout)
    assert (lease["leases"][0]["holder"], lease["leases"][0]["token"]) == ("ana", 2)
    assert finished_slots(remote) == [MONDAY, TUESDAY]
