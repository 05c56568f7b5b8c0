"""The ``git`` capability: what landed on a branch of a local repository, in a window.

``merged_pull_requests {repo, branch?}`` lists the merge commits of the branch's
first-parent history (``git log --merges --first-parent``): a GitHub subject ``Merge pull
request #N from owner/branch`` gives the number and the title (the message's next line); a
GitLab body ``See merge request group/project!N`` gives the number; any other merge keeps
its subject as the title. Its author is the author of the merged branch's tip (the second
parent), the person whose change it was. ``merged_commits {repo, branch?}`` lists every
commit of the first-parent history (merges and direct commits), authored by whoever made
that commit. Both return records ``{sha, number, title, author, merged_at}``, newest first,
whose ``merged_at`` (the committer date, UTC) lies in the window; no e-mail address ever
appears (they are never asked of git, and stripped from names and titles).

git runs without a shell, with a clean environment (no system or global configuration, no
pager, no prompt, no optional locks, hooks pointed at /dev/null, no fsmonitor) and a
timeout. Facets: ``items`` (the records) and ``ids`` (their shas); the cursor is the
branch's head sha.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Any

from heinzel.capabilities.errors import CapabilityError
from heinzel.capabilities.protocols import Fetched, MethodSpec, Window, check_call, fetched
from ledger.event import format_ts, parse_ts
from ledger.lazy import lazy_pattern

__all__ = ["GitCapability", "git_environment", "parse_merge", "strip_emails"]

_ARGS = frozenset({"repo", "branch"})
_METHODS: Mapping[str, MethodSpec] = MappingProxyType(
    {
        name: MethodSpec(name, window=True, args=_ARGS, required=frozenset({"repo"}))
        for name in ("merged_commits", "merged_pull_requests")
    }
)


_github_re = lazy_pattern(r"^Merge pull request #(\d+) from \S+")
_gitlab_re = lazy_pattern(r"^See merge request \S+!(\d+)\s*$", re.MULTILINE)
_email_re = lazy_pattern(r"\s*<?[\w.+-]+@[\w-]+(?:\.[\w-]+)+>?")


_SLACK = timedelta(days=1)
_FIELDS = "%H%x1f%P%x1f%an%x1f%cI%x1f%B"
_CONFIG = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "log.showSignature=false",
    "-c",
    "core.pager=cat",
    "--no-pager",
    "--no-replace-objects",
)


def git_environment(inherited: Mapping[str, str]) -> dict[str, str]:
    """The environment git runs in: only ``PATH`` is kept; no ``GIT_*`` leaks in."""
    env = {"PATH": inherited.get("PATH", os.defpath)}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_TERMINAL_PROMPT="0",
        GIT_PAGER="cat",
        PAGER="cat",
        GIT_OPTIONAL_LOCKS="0",
        LC_ALL="C",
    )
    return env


def strip_emails(text: str) -> str:
    """``text`` with every e-mail address (and its angle brackets) removed."""
    return _email_re().sub("", text).strip()


def parse_merge(message: str) -> tuple[int | None, str]:
    """A merge commit's pull request number (or None) and title, from its message."""
    subject, _, rest = message.strip().partition("\n")
    body_lines = [line.strip() for line in rest.splitlines() if line.strip()]
    github = _github_re().match(subject)
    if github:
        title = body_lines[0] if body_lines else subject
        return int(github[1]), title
    gitlab = _gitlab_re().search(rest)
    if gitlab:
        first = body_lines[0] if body_lines else subject
        title = subject if first.startswith("See merge request") else first
        return int(gitlab[1]), title
    return None, subject


class GitCapability:
    """Merged pull requests and commits of local git repositories (``repo`` resolves
    against ``base``, the contract's folder, when relative)."""

    def __init__(
        self,
        base: Path | None = None,
        *,
        git: str = "git",
        timeout_s: float = 30.0,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self._base = base
        self._git = git
        self._timeout_s = timeout_s
        self._env = git_environment(os.environ if environ is None else environ)

    @property
    def name(self) -> str:
        """``git``."""
        return "git"

    @property
    def methods(self) -> Mapping[str, MethodSpec]:
        """``merged_commits`` and ``merged_pull_requests``, both with a window."""
        return _METHODS

    def fetch(
        self, method: str, args: Mapping[str, Any], window: Window | None, *, now: datetime
    ) -> Fetched:
        """The records of ``method`` in ``window``, with fingerprints and the head sha."""
        check_call(self, method, args, window)
        assert window is not None  # check_call refuses a search method without one
        repo = self._repo(args["repo"])
        branch = args.get("branch", "HEAD")
        if not isinstance(branch, str) or not branch or branch.startswith("-"):
            raise CapabilityError(
                "HZH102", f"git: not a branch name: {branch!r}", "e.g. branch: main"
            )
        head = self._run(repo, "rev-parse", "--verify", "--quiet", f"{branch}^{{commit}}")
        head = head.strip()
        if not head:
            raise CapabilityError(
                "HZH121", f"git: {repo} has no branch {branch}", "check branch: in the contract"
            )
        merges = method == "merged_pull_requests"
        records = self._log(repo, head, window, merges=merges)
        facets = {"items": records, "ids": [record["sha"] for record in records]}
        return fetched(records, facets, cursor=head, now=now)

    def _repo(self, written: Any) -> Path:
        if not isinstance(written, str) or not written:
            raise CapabilityError(
                "HZH102", "git: repo must be a path to a local repository", "e.g. repo: ~/src/app"
            )
        path = Path(written).expanduser()
        if not path.is_absolute():
            if self._base is None:
                raise CapabilityError(
                    "HZH116",
                    f"git: {written} is relative and this contract has no folder",
                    "write an absolute path, or create the Heinzelmännchen with --from FILE",
                )
            path = self._base / path
        if not path.is_dir():
            raise CapabilityError(
                "HZH121", f"git: {path} is not a directory", "check repo: in the contract"
            )
        return path

    def _log(self, repo: Path, head: str, window: Window, *, merges: bool) -> list[dict[str, Any]]:
        options = ["--first-parent", "-z", f"--format={_FIELDS}"]
        if merges:
            options.append("--merges")
        since = format_ts(window.start - _SLACK)
        until = format_ts(window.end + _SLACK)
        out = self._run(repo, "log", *options, f"--since={since}", f"--until={until}", head)
        entries = []
        for chunk in out.split("\0"):
            if not chunk.strip():
                continue
            sha, parent_list, name, date, message = chunk.split("\x1f", 4)
            merged_at = parse_ts(date)
            if window.contains(merged_at):
                entries.append((sha, parent_list.split(), name, merged_at, message))
        tips = [p[1] for _, p, _, _, _ in entries if merges and len(p) > 1]
        tip_authors = self._authors(repo, tips)
        records = []
        for sha, parents, name, merged_at, message in entries:
            author = name
            if merges:
                number, title = parse_merge(message)
                if len(parents) > 1:
                    author = tip_authors.get(parents[1], author)
            else:
                number, title = None, message.strip().partition("\n")[0]
            records.append(
                {
                    "sha": sha,
                    "number": number,
                    "title": strip_emails(title),
                    "author": strip_emails(author),
                    "merged_at": format_ts(merged_at),
                }
            )
        return records

    def _authors(self, repo: Path, shas: Sequence[str]) -> dict[str, str]:
        if not shas:
            return {}
        out = self._run(repo, "log", "--no-walk=unsorted", "-z", "--format=%H%x1f%an", *shas)
        pairs = (chunk.split("\x1f", 1) for chunk in out.split("\0") if chunk.strip())
        return {sha.strip(): name for sha, name in pairs}

    def _run(self, repo: Path, *argv: str) -> str:
        command = [self._git, *_CONFIG, "-C", str(repo), *argv]
        try:
            done = subprocess.run(
                command,
                env=self._env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=self._timeout_s,
                check=False,
            )
        except FileNotFoundError:
            raise CapabilityError(
                "HZH120", f"git is not installed (looked for {self._git})", "install git"
            ) from None
        except subprocess.TimeoutExpired:
            raise CapabilityError(
                "HZH122",
                f"git took longer than {self._timeout_s:g} s in {repo}",
                "check the repository (a network mount, a huge history) and retry",
                retryable=True,
            ) from None
        if done.returncode != 0 and not (argv[0] == "rev-parse" and done.returncode == 1):
            reason = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise CapabilityError(
                "HZH121",
                f"git failed in {repo}: {reason[0] if reason else done.returncode}",
                "check that repo: names a local git repository you can read",
            )
        return done.stdout.decode("utf-8", "replace")
