"""The team repository through the git CLI: a private bare mirror under the home.

Why the CLI and not dulwich or pygit2: the team's remote is whatever its members already
push to (a path, ``file://``, ``ssh://`` with their keys and agent, ``https://`` with their
credential helper), and only the ``git`` executable honours all of that configuration;
``--force-with-lease`` (a compare-and-swap the server checks under its ref lock) and
``--porcelain`` per-ref results are stable, documented interfaces. pygit2 needs libgit2
built with ssh, dulwich reimplements transports; neither is worth a second protocol.

The mirror (``<home>/team/mirror.git``) has no work tree: commits are built with plumbing
(``hash-object``, ``update-index`` on a private index file, ``write-tree``,
``commit-tree``), so nothing is ever checked out and ``main`` is never written. Only
``refs/heads/hz/state`` and ``refs/hz/lease/*`` are ever pushed.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from datetime import datetime
from pathlib import Path

from heinzel.errors import HeinzelError
from ledger.files import ensure_private_dir
from ledger.records import frozen_record

__all__ = ["STATE_REF", "Git", "Pushed", "declined_error", "git_error"]

STATE_REF = "refs/heads/hz/state"
LEASE_PREFIX = "refs/hz/lease/"
_TRACK_STATE = "refs/remotes/origin/hz/state"
_SEEN_STATE = "refs/hz-seen/state"
VERIFIED_STATE = "refs/hz-verified/state"
HONOURED = "refs/hz-honoured/lease/"
"""The last lease commit of each team id whose signature this home verified (or signed)."""
_TRACK_LEASES = "refs/remotes/origin/lease/"
_EMPTY_TREE = {
    "sha1": "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
    "sha256": "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321",
}


def git_error(message: str, detail: str = "") -> HeinzelError:
    """HZH301: the team repository could not be reached or refused a command; the reason
    is git's first ``fatal:`` or ``error:`` line (its advice that follows says nothing)."""
    lines = [line.strip() for line in detail.splitlines() if line.strip()]
    said = [line for line in lines if line.startswith(("fatal:", "error:"))] or lines[-1:]
    return HeinzelError(
        "HZH301",
        f"the team repository: {message}" + (f" ({said[0][:200]})" if said else ""),
        "check [team] repository and that `git ls-remote <repository>` works; "
        "receipts wait in the outbox until it does",
    )


def declined_error(ref: str, reason: str, name: str | None = None) -> HeinzelError:
    """HZH480: the server's hook (`heinzel.team.hook`) refused a push of ``ref``, with its
    reason; a handle off the hook's roster is named with the fix."""
    what = "the receipts" if ref == STATE_REF else f"the lease of {name or ref}"
    found = re.search(r"holder '([^']+)' is not a roster handle|by is not a roster handle", reason)
    if found:
        who = found.group(1) or "a member"
        hint = (
            f"the hook's roster is out of date: it lacks {who}. Add {who} to [team] members "
            "and write the hook again on the server (`hz team hook <bare repository>`)"
        )
    else:
        hint = "`hz team status` shows it; see docs/team.md (Server-side fencing)"
    return HeinzelError(
        "HZH480", f"the team repository's hook refused {what}: {reason}"[:400], hint
    )


def _is_public(key: str) -> bool:
    """Whether the file ``key`` is a public key (its private one is in ``ssh-agent``)."""
    try:
        with open(key, encoding="utf-8") as file:
            return file.read(16).startswith(("ssh-", "ecdsa-", "sk-"))
    except (OSError, UnicodeDecodeError):
        return False


@frozen_record
class Pushed:
    """One push: which refs took, which were rejected (a lease that moved), and of
    those which the server's hook declined (``declined``: ref -> the hook's reason,
    `heinzel.team.hook`), which no retry will change."""

    accepted: frozenset[str]
    rejected: frozenset[str]
    declined: Mapping[str, str] = field(default_factory=dict)


class Git:
    """The mirror of one team repository, driven through ``git`` subprocesses."""

    def __init__(
        self,
        mirror: Path,
        remote: str,
        handle: str,
        clock: Callable[[], datetime],
        signing_key: str | None = None,
    ) -> None:
        """``clock`` is the process's one clock (``HZ_NOW`` in tests): every commit made
        here (the leases, ``hz/state``) is dated by it, never by git's own wall clock;
        ``signing_key`` signs every ``hz/state`` commit (`heinzel.team.signing`)."""
        self.mirror = mirror
        self.remote = remote
        self.clock = clock
        self.signing_key = str(Path(signing_key).expanduser()) if signing_key else None
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_AUTHOR_NAME": handle,
            "GIT_AUTHOR_EMAIL": "",
            "GIT_COMMITTER_NAME": handle,
            "GIT_COMMITTER_EMAIL": "",
        }

    def run(
        self,
        *args: str,
        stdin: str | None = None,
        env: Mapping[str, str] | None = None,
        check: bool = True,
    ) -> subprocess.CompletedProcess[str]:
        try:
            done = subprocess.run(
                ["git", "-C", str(self.mirror), *args],
                input=stdin,
                capture_output=True,
                text=True,
                env={**self.env, **(env or {})},
                timeout=120,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise git_error(f"git {args[0]} did not run", str(error)) from None
        if check and done.returncode != 0:
            raise git_error(f"git {args[0]} failed", done.stderr)
        return done

    def ensure(self) -> None:
        """Create the bare mirror once, its ``origin`` the configured remote."""
        if not (self.mirror / "HEAD").exists():
            ensure_private_dir(self.mirror)
            self.run("init", "--quiet", "--bare")
            self.run("config", "gc.auto", "0")
        self.run("config", "remote.origin.url", self.remote)

    def fetch(self) -> None:
        """One fetch: the ``hz/state`` branch and every lease ref (missing ones are fine)."""
        self.run(
            "fetch",
            "--quiet",
            "--prune",
            "origin",
            "+refs/heads/hz/*:refs/remotes/origin/hz/*",
            f"+{LEASE_PREFIX}*:{_TRACK_LEASES}*",
        )

    def state_tip(self) -> str | None:
        done = self.run("rev-parse", "--verify", "--quiet", _TRACK_STATE, check=False)
        return done.stdout.strip() or None

    def seen_state(self) -> str | None:
        """The ``hz/state`` tip the last fetch examined for a rewrite (kept apart from
        the fetched ref, so a fetch by any path never hides a rewrite from the next)."""
        done = self.run("rev-parse", "--verify", "--quiet", _SEEN_STATE, check=False)
        return done.stdout.strip() or None

    def see_state(self, tip: str | None) -> None:
        if tip is None:
            self.run("update-ref", "-d", _SEEN_STATE, check=False)
        else:
            self.run("update-ref", _SEEN_STATE, tip)

    def descends(self, old: str, new: str | None) -> bool:
        """Whether ``new`` is ``old`` or a descendant of it (a fast-forward)."""
        if new is None:
            return False
        done = self.run("merge-base", "--is-ancestor", old, new, check=False)
        return done.returncode == 0

    def track(self, commit: str) -> None:
        """Our own pushed ``hz/state`` commit as the fetched tip (saves a fetch), and as
        the tip examined last (it descends from it)."""
        self.run("update-ref", _TRACK_STATE, commit)
        self.run("update-ref", _SEEN_STATE, commit)

    def track_leases(self, commits: Mapping[str, str]) -> None:
        """Our own accepted lease commits (``{team id: commit}``) as the fetched refs, in
        one ``git update-ref --stdin``: `leases` (``hz team status``, the listing) shows
        what this machine pushed before the next fetch."""
        if commits:
            lines = "".join(f"update {_TRACK_LEASES}{tid} {sha}\n" for tid, sha in commits.items())
            if self.signing_key is not None:  # signed here: honoured without a check
                lines += "".join(f"update {HONOURED}{tid} {sha}\n" for tid, sha in commits.items())
            self.run("update-ref", "--stdin", stdin=lines, check=False)  # the next fetch has it

    def leases(self) -> dict[str, tuple[str, str]]:
        """``{team id: (commit, message)}`` of the fetched lease refs."""
        done = self.run(
            "for-each-ref",
            "--format=%(refname:lstrip=4)%00%(objectname)%00%(contents:subject)",
            _TRACK_LEASES,
        )
        found: dict[str, tuple[str, str]] = {}
        for line in done.stdout.splitlines():
            name, _, rest = line.partition("\0")
            commit, _, message = rest.partition("\0")
            found[name] = (commit, message)
        return found

    def read(self, commit: str, path: str) -> str | None:
        done = self.run("cat-file", "-p", f"{commit}:{path}", check=False)
        return done.stdout if done.returncode == 0 else None

    def read_many(self, commit: str, paths: Sequence[str] | None) -> dict[str, str]:
        """The text of each of ``paths`` (None: every file) that ``commit`` holds, in two
        git processes (``ls-tree`` for the blobs' ids, one ``cat-file --batch``)."""
        if paths is not None and not paths:
            return {}
        listed = self.run("ls-tree", "-r", "-z", commit, "--", *(paths or ())).stdout
        blobs: dict[str, str] = {}
        for entry in listed.split("\0"):
            head, _, path = entry.partition("\t")
            parts = head.split()
            if len(parts) == 3 and parts[1] == "blob":
                blobs[path] = parts[2]
        if not blobs:
            return {}
        order = list(blobs.items())
        done = subprocess.run(
            ["git", "-C", str(self.mirror), "cat-file", "--batch"],
            input="".join(f"{sha}\n" for _, sha in order).encode(),
            capture_output=True,
            env=self.env,
            timeout=120,
            check=False,
        )
        if done.returncode != 0:
            raise git_error("git cat-file failed", done.stderr.decode(errors="replace"))
        out, at, found = done.stdout, 0, {}
        for path, _sha in order:
            end = out.index(b"\n", at)
            header = out[at:end].split()
            size = int(header[2]) if len(header) == 3 else 0
            found[path] = out[end + 1 : end + 1 + size].decode("utf-8", errors="replace")
            at = end + 1 + size + 1
        return found

    def files(self, commit: str) -> list[str]:
        return self.run("ls-tree", "-r", "--name-only", commit).stdout.split()

    def lease_commits(self, messages: Sequence[str]) -> list[str]:
        """Commits with the empty tree whose one-line messages are the lease records, in
        one ``git hash-object`` process however many (a tick renews every lease it holds)."""
        if not messages:
            return []
        stamp = self._stamp()
        who = f"{self.env['GIT_COMMITTER_NAME']} <>"
        with tempfile.TemporaryDirectory(dir=self.mirror) as scratch:
            paths = []
            for number, message in enumerate(messages):
                path = Path(scratch) / str(number)
                path.write_text(
                    f"tree {self._empty_tree()}\nauthor {who} {stamp}\n"
                    f"committer {who} {stamp}\n\n{message}\n",
                    encoding="utf-8",
                )
                paths.append(str(path))
            if self.signing_key is not None:
                self._sign([Path(p) for p in paths])
            done = self.run(
                "hash-object", "-t", "commit", "-w", "--stdin-paths", stdin="\n".join(paths) + "\n"
            )
        made = done.stdout.split()
        if len(made) != len(messages):
            raise git_error("git hash-object wrote fewer lease commits than asked", done.stderr)
        return made

    def _sign(self, paths: Sequence[Path]) -> None:
        """Sign each commit text at ``paths`` in place as ``git commit -S`` with
        ``gpg.format ssh`` does (`heinzel.team.signing`): ``ssh-keygen -Y sign -n git``
        over the commit, the signature as its ``gpgsig`` header; one ``ssh-keygen`` for
        every lease commit of a tick. HZH481 when the key cannot sign."""
        key = str(self.signing_key)
        agent = ["-U"] if _is_public(key) else []
        try:
            done = subprocess.run(
                ["ssh-keygen", "-q", "-Y", "sign", "-n", "git", "-f", key, *agent]
                + [str(p) for p in paths],
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            done = subprocess.CompletedProcess([], 1, "", str(error))
        said = done.stderr.strip().splitlines()
        if done.returncode != 0:
            raise HeinzelError(
                "HZH481",
                f"[team] signing_key {key} could not sign the lease commits"
                + (f" ({said[-1][:200]})" if said else ""),
                "check the key (`hz team key`, `hz system doctor`)",
            )
        for path in paths:
            signature = Path(f"{path}.sig").read_text(encoding="utf-8").strip().splitlines()
            head, _, body = path.read_text(encoding="utf-8").partition("\n\n")
            header = "gpgsig " + "\n ".join(signature)
            path.write_text(f"{head}\n{header}\n\n{body}", encoding="utf-8")

    def signatures(self, commits: Sequence[str], signers: str) -> dict[str, tuple[str, str]]:
        """``{commit: (status, signer)}`` of each of ``commits`` checked against the
        allowed-signers text ``signers`` (git's ``%G?``, ``G`` a good signature, and
        ``%GS``), in one ``git log --no-walk``."""
        if not commits:
            return {}
        with tempfile.NamedTemporaryFile("w", dir=self.mirror, suffix=".signers") as file:
            file.write(signers)
            file.flush()
            done = self.run(
                "-c",
                f"gpg.ssh.allowedSignersFile={file.name}",
                "log",
                "--no-walk=unsorted",
                "--format=%H%x00%G?%x00%GS",
                *sorted(set(commits)),
                check=False,
            )
        found: dict[str, tuple[str, str]] = {}
        for line in done.stdout.splitlines():
            commit, status, signer = [*line.split("\0"), "", ""][:3]
            found[commit] = (status, signer)
        return found

    def _empty_tree(self) -> str:
        """The empty tree's id in the mirror's object format (git knows it without a
        stored object)."""
        config = (self.mirror / "config").read_text(encoding="utf-8", errors="replace")
        return _EMPTY_TREE["sha256" if "sha256" in config.lower() else "sha1"]

    def state_commit(self, parent: str | None, files: Mapping[str, str], message: str) -> str:
        """A commit of ``files`` (path -> whole new content) over ``parent``'s tree."""
        index = self.mirror / "hz-state.index"
        env = {"GIT_INDEX_FILE": str(index)}
        index.unlink(missing_ok=True)
        if parent is not None:
            self.run("read-tree", parent, env=env)
        for path, content in sorted(files.items()):
            blob = self.run("hash-object", "-w", "--stdin", stdin=content).stdout.strip()
            self.run("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", env=env)
        tree = self.run("write-tree", env=env).stdout.strip()
        index.unlink(missing_ok=True)
        parents = ["-p", parent] if parent is not None else []
        stamp = self._stamp()
        dated = {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
        if self.signing_key is None:
            return self.run("commit-tree", tree, *parents, "-m", message, env=dated).stdout.strip()
        signed = ["-c", "gpg.format=ssh", "-c", f"user.signingkey={self.signing_key}"]
        done = self.run(
            *signed, "commit-tree", "-S", tree, *parents, "-m", message, env=dated, check=False
        )
        if done.returncode != 0:
            raise HeinzelError(
                "HZH481",
                f"[team] signing_key {self.signing_key} could not sign the hz/state commit"
                + (
                    f" ({done.stderr.strip().splitlines()[-1][:200]})"
                    if done.stderr.strip()
                    else ""
                ),
                "check the key (`hz team key`, `hz system doctor`); receipts wait in the outbox",
            )
        return done.stdout.strip()

    def _stamp(self) -> str:
        """The injected clock's time as git's raw date (seconds since the epoch, UTC)."""
        return f"{int(self.clock().timestamp())} +0000"

    def push(self, updates: Sequence[tuple[str, str, str | None]]) -> Pushed:
        """Compare-and-swap pushes of ``(ref, new commit, expected old commit or None for
        absent)``, in one ``git push`` (not atomic: each ref takes or is rejected alone)."""
        if not updates:
            return Pushed(frozenset(), frozenset())
        args = ["push", "--porcelain", "--no-verify", "origin"]
        args += [f"--force-with-lease={ref}:{old or ''}" for ref, _, old in updates]
        args += [f"{new}:{ref}" for ref, new, _ in updates]
        done = self.run(*args, check=False)
        accepted: set[str] = set()
        rejected: set[str] = set()
        declined: dict[str, str] = {}
        said = [
            line.split("hz: refused:", 1)[1].strip()
            for line in done.stderr.splitlines()
            if "hz: refused:" in line
        ]
        for line in done.stdout.splitlines():
            parts = line.split("\t")
            if len(parts) < 3 or ":" not in parts[1]:
                continue
            ref = parts[1].split(":", 1)[1]
            (rejected if parts[0].strip() == "!" else accepted).add(ref)
            if parts[0].strip() == "!" and "hook declined" in parts[2]:
                mine = [s for s in said if s.startswith(f"{ref}:")] or said
                declined[ref] = mine[0] if mine else parts[2].strip()
        if not accepted and not rejected:
            raise git_error("git push failed", done.stderr)
        return Pushed(frozenset(accepted), frozenset(rejected), declined)
