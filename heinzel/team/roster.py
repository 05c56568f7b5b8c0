"""The roster on ``hz/state``: ``roster.toml``, the team's handles, roles and SSH keys,
changed only by commits its owner signs.

Why TOML and not the allowed-signers format itself: the roster carries a role per handle
(one ``owner``, who alone may change it; every other handle a ``member``), which the
allowed-signers format cannot hold (``ssh-keygen`` refuses options it does not know), and
a reviewer reads a table per member more easily than a line of base64. The allowed-signers
file git verifies with is derived from it mechanically (`Roster.allowed_signers`: one
``<handle> namespaces="git" <key>`` line per key), so what the owner signs is what every
machine verifies against.

Trust: the first roster on the branch is trusted on first use: it must be signed by a key
it names for its owner, and that owner's keys are pinned in ``<home>/team/roster.json``;
a rewrite that puts another first roster in front is refused unless a pinned key signed
it. Every later change of the file must be signed by the owner of the roster before it
(`follow`); one that is not is refused (HZH482): the previous roster stays in force and
the change is quarantined.
"""

from __future__ import annotations

import json
import re
import tempfile
import tomllib
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ledger.records import frozen_record, mutable_record

if TYPE_CHECKING:
    from heinzel.team.git import Git

__all__ = [
    "MACHINE",
    "ROSTER_PATH",
    "Roster",
    "RosterState",
    "follow",
    "parse",
    "parse_key",
    "signed_by",
]

ROSTER_PATH = "roster.toml"
_HANDLE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}")
MACHINE = re.compile(r"mc-[0-9a-f]{20}")
_KEY = re.compile(r"((?:ssh|ecdsa|sk)-[A-Za-z0-9@.-]+) ([A-Za-z0-9+/=]{16,})")
ROLES = ("owner", "member")


def parse_key(text: str) -> str | None:
    """The ``<type> <base64>`` public key in ``text`` (a key, a ``.pub`` file's line or
    ``hz team key``'s allowed-signers line), else None."""
    found = _KEY.search(text)
    return f"{found.group(1)} {found.group(2)}" if found else None


@frozen_record
class Roster:
    """The handles of a team, each with its role and public keys, and the machines each
    runs hz on (``machines``: handle -> {name: machine id}; optional, informative: `hz
    team status` names a lease's machine by it and marks one its holder did not list)."""

    members: Mapping[str, tuple[str, tuple[str, ...]]]  # handle -> (role, keys)
    machines: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    @property
    def owner(self) -> str:
        return next(h for h, (role, _) in self.members.items() if role == "owner")

    def handles(self) -> set[str]:
        return set(self.members)

    def keys(self, handle: str) -> tuple[str, ...]:
        return self.members[handle][1] if handle in self.members else ()

    def allowed_signers(self, only: str | None = None) -> str:
        """The allowed-signers file (``gpg.ssh.allowedSignersFile``) of every key, or of
        ``only``'s keys."""
        return "".join(
            f'{handle} namespaces="git" {key}\n'
            for handle, (_, keys) in sorted(self.members.items())
            if only is None or handle == only
            for key in keys
        )

    def render(self) -> str:
        lines = [
            '# The team\'s roster (docs/team.md, "The roster on hz/state"): hz changes it',
            "# only by commits its owner signs (`hz team roster add|remove`).",
        ]
        for handle, (role, keys) in sorted(
            self.members.items(), key=lambda m: (m[1][0] != "owner", m[0])
        ):
            lines += ["", f"[members.{handle}]", f"role = {json.dumps(role)}"]
            lines.append("keys = [" + ", ".join(json.dumps(k) for k in keys) + "]")
            if self.machines.get(handle):
                lines.append(f"[members.{handle}.machines]")
                lines += [
                    f"{n} = {json.dumps(m)}" for n, m in sorted(self.machines[handle].items())
                ]
        return "\n".join(lines) + "\n"

    def with_member(
        self, handle: str, role: str, key: str, machines: Mapping[str, str] | None = None
    ) -> Roster:
        members = dict(self.members)
        if role == "owner":
            members = {h: ("member", k) for h, (_, k) in members.items()}
        old = members.get(handle, (role, ()))[1]
        members[handle] = (role, tuple(dict.fromkeys((*old, key))))
        listed = {h: dict(m) for h, m in self.machines.items()}
        if machines:
            listed[handle] = {**listed.get(handle, {}), **machines}
        return Roster(members, listed)

    def without(self, handle: str) -> Roster:
        return Roster(
            {h: m for h, m in self.members.items() if h != handle},
            {h: m for h, m in self.machines.items() if h != handle},
        )

    def machine_name(self, handle: str, machine: str | None) -> str | None:
        """The name ``handle`` gave ``machine`` on the roster, else None."""
        found = [n for n, m in self.machines.get(handle, {}).items() if m == machine]
        return found[0] if found else None


def parse(text: str) -> Roster:
    """The roster ``roster.toml`` holds; ValueError naming what is wrong."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"not TOML ({error})") from None
    table = data.get("members")
    if not isinstance(table, dict) or not table:
        raise ValueError("no [members.<handle>] table")
    members: dict[str, tuple[str, tuple[str, ...]]] = {}
    machines: dict[str, dict[str, str]] = {}
    for handle, entry in table.items():
        if not _HANDLE.fullmatch(handle) or not isinstance(entry, dict):
            raise ValueError(f"{handle[:40]!r} is not a handle with a table")
        role, keys = entry.get("role", "member"), entry.get("keys", [])
        if role not in ROLES:
            raise ValueError(f"{handle}: role {str(role)[:20]!r} is not owner or member")
        if not isinstance(keys, list) or not all(isinstance(k, str) and parse_key(k) for k in keys):
            raise ValueError(f"{handle}: keys must be a list of SSH public keys")
        members[handle] = (role, tuple(str(parse_key(k)) for k in keys))
        listed = entry.get("machines", {})
        if not isinstance(listed, dict) or not all(
            _HANDLE.fullmatch(n) and isinstance(m, str) and MACHINE.fullmatch(m)
            for n, m in listed.items()
        ):
            raise ValueError(f"{handle}: machines must be a table of name = machine id (mc-...)")
        if listed:
            machines[handle] = dict(listed)
    owners = [h for h, (role, _) in members.items() if role == "owner"]
    if len(owners) != 1:
        raise ValueError(f"{len(owners)} owners: a roster has exactly one")
    if not members[owners[0]][1]:
        raise ValueError(f"the owner {owners[0]} has no key")
    return Roster(members, machines)


@mutable_record
class RosterState:
    """What this home accepted of the roster (``<home>/team/roster.json``): the roster in
    force (``text``, from commit ``commit``), the ``hz/state`` tip examined last, the
    owner's keys pinned on first use, and the changes refused (``refused``: commit,
    signer, reason)."""

    text: str | None = None
    commit: str | None = None
    examined: str | None = None
    pinned: list[str] = field(default_factory=list)
    refused: list[dict[str, str]] = field(default_factory=list)

    @property
    def roster(self) -> Roster | None:
        return parse(self.text) if self.text else None

    @classmethod
    def load(cls, path: Path) -> RosterState:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return cls()
        if not isinstance(data, dict):
            return cls()
        return cls(
            text=data.get("text"),
            commit=data.get("commit"),
            examined=data.get("examined"),
            pinned=[str(k) for k in data.get("pinned") or []],
            refused=[r for r in data.get("refused") or [] if isinstance(r, dict)],
        )

    def dump(self) -> bytes:
        data: dict[str, Any] = {
            "text": self.text,
            "commit": self.commit,
            "examined": self.examined,
            "pinned": self.pinned,
            "refused": self.refused,
        }
        return json.dumps(data, sort_keys=True).encode()


def signed_by(git: Git, commit: str, signers: str) -> tuple[str, str]:
    """``(status, signer)`` of ``commit``'s signature checked against the allowed-signers
    text ``signers`` (git's ``%G?`` and ``%GS``: ``G`` is a good signature)."""
    with tempfile.NamedTemporaryFile("w", dir=git.mirror, suffix=".signers") as file:
        file.write(signers)
        file.flush()
        done = git.run(
            "-c",
            f"gpg.ssh.allowedSignersFile={file.name}",
            "log",
            "-1",
            "--format=%G?%x00%GS",
            commit,
            check=False,
        )
    status, _, signer = done.stdout.strip().partition("\0")
    return status or "N", signer


def follow(git: Git, state: RosterState, tip: str | None, pin: str | None = None) -> list[str]:
    """Walk the commits of ``hz/state`` up to ``tip`` that change ``roster.toml`` and
    were not examined yet, oldest first, updating ``state``: a change signed by the owner
    of the roster in force becomes the roster; the first roster must be signed by its own
    owner's key (the pinned one, when one is pinned: ``pin`` or a key pinned before). The
    refusals found now, each a sentence (they are added to ``state.refused``)."""
    if tip is None:
        return []
    since = state.examined
    kept = (state.text, state.commit)
    if since is not None and not git.descends(since, tip):
        since = None  # a rewrite: walk the branch as it is now from its first roster
        state.text, state.commit = None, None
    span = tip if since is None else f"{since}..{tip}"
    listed = git.run(
        "log", "--reverse", "--topo-order", "--format=%H", span, "--", ROSTER_PATH, check=False
    ).stdout.split()
    known = {r.get("commit") for r in state.refused}
    said: list[str] = []
    for commit in listed:
        reason, signer = _judge(git, state, commit, pin)
        if reason is None:
            continue
        if commit not in known:
            state.refused.append({"commit": commit, "signer": signer, "reason": reason})
            said.append(f"roster change {commit[:12]} refused: {reason}")
    if state.text is None and kept[0] is not None:
        # a rewrite that drops the roster does not switch signing off: it stays in force
        state.text, state.commit = kept
        said.append(
            f"a rewrite of hz/state to {tip[:12]} dropped the roster (commit "
            f"{str(kept[1])[:12]}); it stays in force"
        )
        state.refused.append({"commit": tip, "signer": "", "reason": "dropped the roster"})
    state.examined = tip
    return said


def _judge(git: Git, state: RosterState, commit: str, pin: str | None) -> tuple[str | None, str]:
    """Accept ``commit``'s roster into ``state`` (None) or say why not, with its signer."""
    text = git.read(commit, ROSTER_PATH)
    if text is None:
        return "the roster is never deleted", ""
    try:
        new = parse(text)
    except ValueError as error:
        return f"roster.toml is not a roster: {error}", ""
    current = state.roster
    if current is None:
        pinned = [k for k in (*state.pinned, *([pin] if pin else [])) if k]
        signers = (
            "".join(f'{new.owner} namespaces="git" {k}\n' for k in pinned)
            if pinned
            else new.allowed_signers(only=new.owner)
        )
        status, signer = signed_by(git, commit, signers)
        if status != "G" or signer != new.owner:
            why = "the pinned owner key" if pinned else f"its owner {new.owner}'s key"
            return f"the first roster is not signed by {why}", signer
        if not state.pinned:
            state.pinned = list(new.keys(new.owner))
    else:
        status, signer = signed_by(git, commit, current.allowed_signers())
        if status != "G" or signer != current.owner:
            by = f"signed by {signer!r}" if signer else "unsigned or signed by an unknown key"
            return f"changed by a commit {by}, not by the owner {current.owner}", signer
    state.text, state.commit = text, commit
    return None, signer
