"""Signed ``hz/state`` commits: git's own SSH signing (``gpg.format ssh``,
``user.signingkey``), verified against an allowed-signers file (``ssh-keygen -Y
verify``'s format, the one git reads as ``gpg.ssh.allowedSignersFile``).

A member names its key in ``[team] signing_key`` (a private key's path, or a public
key's with the private one in ``ssh-agent``); every ``hz/state`` commit its daemon makes
is then signed with it (`heinzel.team.git.Git.state_commit`). ``hz team key`` prints the
member's allowed-signers line for the team's file, or how to make a key; ``hz team hook
--allowed-signers FILE`` makes the server refuse an ``hz/state`` commit that is not
signed by a key in that file, or that adds a line whose ``by`` is not its signer's
handle (`heinzel.team.hook.check_push`).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heinzel.errors import HeinzelError

if TYPE_CHECKING:
    from heinzel.team.git import Git

__all__ = ["key_check", "public_key", "signer_line", "unsigned_lines"]

_SETUP = (
    "make one with `ssh-keygen -t ed25519 -N '' -f ~/.ssh/hz_team` (or use your forge's "
    'key), set [team] signing_key = "~/.ssh/hz_team" and give `hz team key`\'s line to '
    "the team's owner for the allowed-signers file (docs/team.md)"
)


def public_key(key: str) -> str:
    """The public key (``<type> <base64>``) of the signing key at ``key``: the file
    itself when it is a public key, else its ``.pub`` beside it, else what ``ssh-keygen
    -y`` derives. HZH481 when there is none."""
    path = Path(key).expanduser()
    for candidate in (path, Path(f"{path}.pub")):
        try:
            text = candidate.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            continue
        parts = text.split()
        if len(parts) >= 2 and parts[0].startswith(("ssh-", "ecdsa-", "sk-")):
            return f"{parts[0]} {parts[1]}"
    try:
        done = subprocess.run(
            ["ssh-keygen", "-y", "-f", str(path)],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        done = None
    if done is not None and done.returncode == 0 and len(done.stdout.split()) >= 2:
        kind, body = done.stdout.split()[:2]
        return f"{kind} {body}"
    raise HeinzelError(
        "HZH481",
        f"[team] signing_key {key} is not a readable SSH key",
        _SETUP,
    )


def signer_line(handle: str, key: str | None) -> str:
    """This member's line of the allowed-signers file (``<handle> namespaces="git"
    <public key>``); HZH481 with the set-up line when no key is configured."""
    if not key:
        raise HeinzelError(
            "HZH481", "no [team] signing_key: your hz/state commits are unsigned", _SETUP
        )
    return f'{handle} namespaces="git" {public_key(key)}'


def key_check(
    handle: str | None, key: str | None, refusal: HeinzelError | None = None
) -> dict[str, Any]:
    """``hz system doctor``'s check of the signing key (a team member's home only): none
    is fine until the team's hook asks for signatures or the roster on ``hz/state``
    requires them (``refusal``: `heinzel.team.team.Team.signing_refusal`, HZH483 or
    HZH484); a key named but unreadable is not."""
    if refusal is not None:
        return {
            "name": "team signing key",
            "ok": False,
            "code": refusal.code,
            "detail": refusal.message,
            "fix": refusal.hint,
        }
    if not key:
        return {
            "name": "team signing key",
            "ok": True,
            "detail": "none: your hz/state commits are unsigned; `hz team key` says how to "
            "make one",
        }
    try:
        line = signer_line(str(handle), key)
    except HeinzelError as error:
        return {
            "name": "team signing key",
            "ok": False,
            "code": error.code,
            "detail": error.message,
            "fix": error.hint,
        }
    return {"name": "team signing key", "ok": True, "detail": line}


def unsigned_lines(git: Git, allowed: str, since: str | None, tip: str) -> dict[str, str]:
    """``{receipt id: why}`` of each line the commits ``since..tip`` of ``hz/state`` add
    (all of ``tip``'s history when ``since`` is None) that is not signed by its writer:
    its commit is unsigned or signed by a key outside ``allowed`` (an allowed-signers
    file), or signed by another handle than the line's ``by``. One ``git log -p``."""
    span = tip if since is None else f"{since}..{tip}"
    done = git.run(
        "-c",
        f"gpg.ssh.allowedSignersFile={Path(allowed).expanduser()}",
        "log",
        "--format=%x01%H%x00%G?%x00%GS",
        "-p",
        "--unified=0",
        "--no-color",
        span,
        check=False,
    )
    found: dict[str, str] = {}
    status, signer, commit = "N", "", ""
    for line in done.stdout.splitlines():
        if line.startswith("\x01"):
            commit, status, signer = [*line[1:].split("\0"), "", ""][:3]
            continue
        if not line.startswith("+{"):
            continue
        try:
            record = json.loads(line[1:])
        except ValueError:
            continue
        if not isinstance(record, dict) or not record.get("id"):
            continue
        by = record.get("by")
        if status != "G":
            found[str(record["id"])] = (
                f"its commit {commit[:12]} is not signed by a key of the allowed signers"
            )
        elif by != signer:
            found[str(record["id"])] = (
                f"written as {str(by)[:40]!r} in commit {commit[:12]} signed by {signer[:40]!r}"
            )
    return found
