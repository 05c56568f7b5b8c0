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
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heinzel.errors import HeinzelError
from ledger.files import ensure_private_dir, write_atomic

if TYPE_CHECKING:
    from heinzel.team.git import Git

__all__ = ["key_check", "make_key", "public_key", "signer_line", "unsigned_lines"]

_SETUP = (
    "run `hz team key`: it makes an ed25519 key with ssh-keygen, sets [team] signing_key "
    "and prints the line to give the team's owner (or set signing_key to your forge's key; "
    "docs/team.md)"
)


def make_key(folder: Path, handle: str, config: Path | None) -> tuple[Path, Path]:
    """Make an ed25519 key ``<folder>/signing_key`` (0600, no passphrase: a daemon signs
    unattended) with ``ssh-keygen``, or keep the one a run before made, and set it as
    ``[team] signing_key`` under the ``[team]`` table of ``config``. ``(key, config)``;
    HZH487 when ``ssh-keygen`` fails or the file cannot take the line."""
    if config is None:
        raise HeinzelError(
            "HZH487",
            "no configuration file sets [team] handle, so hz cannot set signing_key",
            "set [team] handle in your config.toml (or the file HZ_CONFIG names), then run "
            "`hz team key` again",
        )
    try:
        text = config.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise HeinzelError(
            "HZH487", f"can't read {config}: {error}", "check the file, then run it again"
        ) from None
    lines = text.splitlines(keepends=True)
    header = next(
        (i for i, line in enumerate(lines) if line.split("#", 1)[0].strip() == "[team]"), None
    )
    if header is None:
        raise HeinzelError(
            "HZH487",
            f"{config} sets the team without a [team] table line, so hz cannot add signing_key",
            f'add signing_key = "{folder / "signing_key"}" under [team] by hand after '
            "`hz team key` made the key, or write the table as [team]",
        )
    ensure_private_dir(folder)
    key = folder / "signing_key"
    if not key.exists():
        try:
            done = subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", handle, "-f", str(key)],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            done = subprocess.CompletedProcess([], 1, "", str(error))
        if done.returncode != 0:
            raise HeinzelError(
                "HZH487",
                f"ssh-keygen could not make {key}: {(done.stderr or '').strip()[:200]}",
                "install OpenSSH's ssh-keygen (8.2 or later), or make a key yourself and set "
                "[team] signing_key to it",
            )
    key.chmod(0o600)
    lines.insert(header + 1, f"signing_key = {json.dumps(str(key))}\n")
    new = "".join(lines)
    try:
        team = tomllib.loads(new).get("team")
    except tomllib.TOMLDecodeError:
        team = None
    if not isinstance(team, dict) or team.get("signing_key") != str(key):
        raise HeinzelError(
            "HZH487",
            f"{config} would not read back with signing_key set (its [team] table is unusual)",
            f'add signing_key = "{key}" under [team] by hand',
        )
    write_atomic(config, new.encode())
    return key, config


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
    requires them (``refusal``: `heinzel.team.trust.Trust.signing_refusal`, HZH483 or
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
            "detail": "none: your hz/state commits are unsigned; `hz team key` makes one",
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
