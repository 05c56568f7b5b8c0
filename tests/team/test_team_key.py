"""`hz team key`: a member without a signing key gets one made (real `ssh-keygen`) and
set in its config, and the line the roster's owner adds; through the `hz` executable
against a bare team repository (docs/team.md, "The roster on hz/state")."""

from __future__ import annotations

import json
import stat
import tomllib
from datetime import timedelta
from pathlib import Path

from .test_signing import _key
from .test_two_machines import START, Machine, Two


def test_a_member_without_a_key_makes_one_with_hz_team_key_and_the_owner_adds_its_line(
    tmp_path: Path,
    two: Two,
) -> None:
    """Ben has no key: `hz team key` makes an ed25519 key in his home's private team
    folder (0600), sets it as [team] signing_key in his config and prints his line; run
    again, it shows the same line and makes nothing. Ana adds the line to the roster and
    Ben's next tick pushes signed (his outbox empties, doctor's key check passes)."""
    _remote, ana, ben = two
    _key(tmp_path, ana, "ana")
    made = ben.hz(START, "team", "key", "--json")
    shown = json.loads(made.stdout)
    key = Path(shown["made"])
    assert key.parent == ben.root / "home" / "team"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    assert shown["config"] == str(ben.config)
    config = tomllib.loads(ben.config.read_text(encoding="utf-8"))["team"]
    assert config["signing_key"] == str(key) and config["handle"] == "ben"
    assert shown["allowed_signer"].startswith('ben namespaces="git" ssh-ed25519 ')
    assert "hz team roster add ben" in made.stderr
    again = ben.hz(START, "team", "key")
    assert again.stdout.strip() == shown["allowed_signer"] and again.stderr == ""

    ana.hz(START, "team", "roster", "add", "ben", again.stdout.strip())
    tuesday = START + timedelta(days=1, hours=12)
    ben.hz(tuesday, "system", "daemon", "tick")
    assert json.loads(ben.hz(tuesday, "team", "status", "--json").stdout)["outbox"] == 0
    doctor = json.loads(ben.hz(tuesday, "system", "doctor", "--json", check=False).stdout)
    [check] = [c for c in doctor["checks"] if c["name"] == "team signing key"]
    assert check["ok"] and shown["allowed_signer"] in check["detail"]


def test_hz_team_key_refuses_a_config_it_cannot_set_the_key_in_and_changes_nothing(
    tmp_path: Path,
) -> None:
    """A config that sets the team with dotted keys (no [team] line): HZH487 with how to
    set the key by hand, exit 1; no key is made and the file is unchanged."""
    remote = tmp_path / "team.git"
    cai = Machine(tmp_path, "cai", remote)
    text = f'team.repository = "{remote}"\nteam.handle = "cai"\n'
    cai.config.write_text(text, encoding="utf-8")
    refused = cai.hz(START, "team", "key", check=False)
    assert refused.returncode == 1 and "HZH487" in refused.stderr
    assert "signing_key" in refused.stderr
    assert cai.config.read_text(encoding="utf-8") == text
    assert not (cai.root / "home" / "team" / "signing_key").exists()


def test_the_roster_lists_members_machines_and_status_names_the_machine_holding_a_lease(
    tmp_path: Path,
    two: Two,
) -> None:
    """Ana lists her laptop and Ben his desk on the roster (`--machine NAME=ID`, the id
    `hz team status` shows on each); `hz team roster` shows them and Ben's `hz team
    status` names the machine that holds Ana's lease by its roster name. A machine that
    is not a machine id is refused (HZH486) and the roster stays as it was."""
    _remote, ana, ben = two
    _key(tmp_path, ana, "ana")
    ben_key = _key(tmp_path, ben, "ben")
    ids = {
        m: json.loads(m.hz(START, "team", "status", "--json").stdout)["machine"] for m in (ana, ben)
    }
    ana_pub = str(tmp_path / "ana_key.pub")
    ana.hz(START, "team", "roster", "add", "ana", ana_pub, "--machine", f"laptop={ids[ana]}")
    ana.hz(
        START,
        "team",
        "roster",
        "add",
        "ben",
        str(ben_key.with_suffix(".pub")),
        "--machine",
        f"desk={ids[ben]}",
    )
    shown = json.loads(ana.hz(START, "team", "roster", "--json").stdout)
    listed = {m["handle"]: m["machines"] for m in shown["members"]}
    assert listed == {"ana": {"laptop": ids[ana]}, "ben": {"desk": ids[ben]}}
    assert f"machines: laptop ({ids[ana]})" in ana.hz(START, "team", "roster").stdout

    bad = ana.hz(
        START,
        "team",
        "roster",
        "add",
        "ben",
        str(ben_key.with_suffix(".pub")),
        "--machine",
        "phone=not-an-id",
        check=False,
    )
    assert bad.returncode == 1 and "HZH486" in bad.stderr and "--machine" in bad.stderr
    assert json.loads(ana.hz(START, "team", "roster", "--json").stdout)["commit"] == shown["commit"]

    ana.hz(START + timedelta(hours=12), "system", "daemon", "tick")
    ben.hz(START + timedelta(hours=12, minutes=5), "system", "daemon", "tick")
    status = ben.hz(START + timedelta(hours=12, minutes=5), "team", "status")
    assert f"ana on laptop ({ids[ana]})" in status.stdout
