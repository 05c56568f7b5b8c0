"""GitHub as ``code-host`` and ``tracker``: merged pull requests, commits and issues.

``code-host.merged_pull_requests {repo, base?}`` reads ``/repos/{repo}/pulls`` (closed,
newest update first) and keeps those merged in the window; ``code-host.merged_commits
{repo, branch?}`` reads ``/repos/{repo}/commits`` and keeps those committed in it;
``code-host.issues {repo, labels?, state?}`` and ``tracker.issues_updated {project,
query?}`` read ``/repos/{repo}/issues`` (issues and pull requests) and keep those updated
in it. ``project`` is ``owner/name``; a ``board`` (``owner/number``) reads a GitHub Projects
board through GraphQL instead (`heinzel.capabilities.github_projects`);
``query`` is a case-insensitive substring of the title or body. Records are oldest first;
no e-mail address is ever kept, not in the records nor in the listings `GitHubClient`
keeps on disk (`kept_item` cuts each item to the fields the records are made of); a body
is cut at 4000 characters. Facets ``items`` and
``ids``; the cursor is the listing's ETag.
Requests go through `GitHubClient` (conditional, paginated, rate limits respected).

`github_token` finds the credential: ``GH_TOKEN``, ``GITHUB_TOKEN``, then ``gh auth
token`` when the gh CLI is logged in; without one hz reads public repositories only.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

from heinzel.capabilities.errors import CapabilityError
from heinzel.capabilities.git import strip_emails
from heinzel.capabilities.github_http import GITHUB_API, GitHubClient
from heinzel.capabilities.github_projects import read_board
from heinzel.capabilities.protocols import Fetched, MethodSpec, Window, check_call, fetched
from ledger.event import format_ts, parse_ts

__all__ = ["GitHubSource", "github_code_host", "github_token", "github_tracker", "kept_item"]

_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_BODY_CHARS = 4000
_SLACK = timedelta(days=1)


def _spec(name: str, args: set[str], required: set[str]) -> MethodSpec:
    return MethodSpec(name, window=True, args=frozenset(args), required=frozenset(required))


_CODE_HOST = {
    "merged_pull_requests": _spec("merged_pull_requests", {"repo", "base"}, {"repo"}),
    "merged_commits": _spec("merged_commits", {"repo", "branch"}, {"repo"}),
    "issues": _spec("issues", {"repo", "labels", "state"}, {"repo"}),
}
_TRACKER = {"issues_updated": _spec("issues_updated", {"project", "board", "query"}, set())}


def github_token(
    environ: Mapping[str, str],
    *,
    base_url: str | None = None,
    variables: tuple[str, ...] = ("GH_TOKEN", "GITHUB_TOKEN"),
    stored: Callable[[str], str | None] | None = None,
) -> str | None:
    """The token: the first of ``variables`` set (a table's ``token_env``, ``GH_TOKEN``,
    ``GITHUB_TOKEN``), the ``github`` credential hz stores (``stored``), or ``gh auth
    token`` for the host of ``base_url``; None when there is none (anonymous reads)."""
    for name in variables:
        if name and environ.get(name):
            return environ[name]
    kept = stored("github") if stored is not None else None
    if kept:
        return kept
    gh = shutil.which("gh", path=environ.get("PATH"))
    if gh is None:
        return None
    host = urlsplit(base_url or GITHUB_API).hostname or "github.com"
    host = "github.com" if host == "api.github.com" else host
    try:
        done = subprocess.run(
            [gh, "auth", "token", "--hostname", host],
            capture_output=True,
            timeout=10,
            check=False,
            stdin=subprocess.DEVNULL,
            env={"PATH": environ.get("PATH", ""), "HOME": environ.get("HOME", "")},
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    token = done.stdout.decode("utf-8", "replace").strip()
    return token if done.returncode == 0 and token else None


class GitHubSource:
    """A read capability named ``name`` answering its methods from GitHub."""

    def __init__(self, name: str, client: GitHubClient, methods: Mapping[str, MethodSpec]) -> None:
        self._name = name
        self.client = client
        self._methods = MappingProxyType(dict(methods))

    @property
    def name(self) -> str:
        """``code-host`` or ``tracker``."""
        return self._name

    @property
    def methods(self) -> Mapping[str, MethodSpec]:
        """Its windowed methods."""
        return self._methods

    def fetch(
        self, method: str, args: Mapping[str, Any], window: Window | None, *, now: datetime
    ) -> Fetched:
        """The records of ``method`` in ``window`` (one request when nothing moved)."""
        check_call(self, method, args, window)
        assert window is not None  # check_call refuses a search method without one
        if args.get("board") is not None:
            if args.get("project") is not None:
                raise CapabilityError(
                    "HZH102",
                    "github: name a board or a project (a repository), not both",
                    "board: owner/number reads a Projects board; project: owner/name a repository",
                )
            records = read_board(self.client, args["board"], args, window)
            ids = [r["key"] for r in records]
            return fetched(records, {"items": records, "ids": ids}, cursor=None, now=now)
        repo = _repo(args.get("project" if method == "issues_updated" else "repo"))
        reader: Callable[[str, Mapping[str, Any], Window], tuple[list[dict[str, Any]], Any]]
        reader = {
            "merged_pull_requests": self._pulls,
            "merged_commits": self._commits,
            "issues": self._issues,
            "issues_updated": self._issues,
        }[method]
        records, etag = reader(repo, args, window)
        ids = [record.get("sha", record.get("number")) for record in records]
        return fetched(records, {"items": records, "ids": ids}, cursor=etag, now=now)

    def _pulls(
        self, repo: str, args: Mapping[str, Any], window: Window
    ) -> tuple[list[dict[str, Any]], str | None]:
        params = {"state": "closed", "sort": "updated", "direction": "desc", "per_page": "100"}
        if args.get("base"):
            params["base"] = str(args["base"])
        items, etag = self.client.listing(
            f"repos/{repo}/pulls",
            params,
            older=lambda item: _before(item.get("updated_at"), window.start),
            since=format_ts(window.start),
            keep=kept_item,
        )
        records = [
            {
                "number": item.get("number"),
                "title": strip_emails(str(item.get("title") or "")),
                "author": _login(item.get("user")),
                "merged_at": item["merged_at"],
                "base": (item.get("base") or {}).get("ref"),
                "url": item.get("html_url"),
                "body": _body(item.get("body")),
            }
            for item in items
            if _inside(item.get("merged_at"), window)
        ]
        return sorted(records, key=lambda r: str(r["merged_at"])), etag

    def _commits(
        self, repo: str, args: Mapping[str, Any], window: Window
    ) -> tuple[list[dict[str, Any]], str | None]:
        params = {"per_page": "100"}
        if args.get("branch"):
            params["sha"] = str(args["branch"])
        items, etag = self.client.listing(
            f"repos/{repo}/commits",
            params,
            older=lambda item: _before(_committed(item), window.start - _SLACK),
            since=format_ts(window.start - _SLACK),
            keep=kept_item,
        )
        records = []
        for item in items:
            at = _committed(item)
            if not _inside(at, window):
                continue
            commit = item.get("commit") or {}
            message = str(commit.get("message") or "")
            records.append(
                {
                    "sha": item.get("sha"),
                    "title": strip_emails(message.strip().partition("\n")[0]),
                    "author": _login(item.get("author"))
                    or strip_emails(str((commit.get("author") or {}).get("name") or "")),
                    "merged_at": at,
                }
            )
        return sorted(records, key=lambda r: str(r["merged_at"])), etag

    def _issues(
        self, repo: str, args: Mapping[str, Any], window: Window
    ) -> tuple[list[dict[str, Any]], str | None]:
        params = {"state": "all", "sort": "updated", "direction": "desc", "per_page": "100"}
        for name in ("labels", "state"):
            if args.get(name):
                value = args[name]
                params[name] = ",".join(value) if isinstance(value, list) else str(value)
        items, etag = self.client.listing(
            f"repos/{repo}/issues",
            params,
            older=lambda item: _before(item.get("updated_at"), window.start),
            since=format_ts(window.start),
            keep=kept_item,
        )
        needle = str(args.get("query") or "").casefold()
        records = [
            {
                "key": f"{repo}#{item.get('number')}",
                "number": item.get("number"),
                "kind": "pull_request" if "pull_request" in item else "issue",
                "title": strip_emails(str(item.get("title") or "")),
                "state": item.get("state"),
                "author": _login(item.get("user")),
                "labels": [
                    label.get("name")
                    for label in item.get("labels") or []
                    if isinstance(label, dict)
                ],
                "updated_at": item["updated_at"],
                "url": item.get("html_url"),
                "body": _body(item.get("body")),
            }
            for item in items
            if _inside(item.get("updated_at"), window)
            and needle in f"{item.get('title') or ''} {item.get('body') or ''}".casefold()
        ]
        return sorted(records, key=lambda r: str(r["updated_at"])), etag


def kept_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """A pull request, commit or issue of a listing cut to what the records read: no
    e-mail address (a commit's author keeps its name, e-mails struck out), the body cut
    as the record's is; what `GitHubClient` keeps on disk."""
    out: dict[str, Any] = {
        name: item[name]
        for name in ("number", "sha", "state", "merged_at", "updated_at", "html_url")
        if name in item
    }
    if "title" in item:
        out["title"] = strip_emails(str(item.get("title") or ""))
    if "body" in item:
        out["body"] = _body(item.get("body"))
    for name in ("user", "author"):
        if (login := _login(item.get(name))) is not None:
            out[name] = {"login": login}
    base = item.get("base")
    if isinstance(base, dict) and base.get("ref") is not None:
        out["base"] = {"ref": base["ref"]}
    if isinstance(item.get("labels"), list):
        out["labels"] = [
            {"name": label.get("name")} for label in item["labels"] if isinstance(label, dict)
        ]
    if "pull_request" in item:
        out["pull_request"] = {}
    commit = item.get("commit")
    if isinstance(commit, dict):
        message = str(commit.get("message") or "").strip().partition("\n")[0]
        name = str((commit.get("author") or {}).get("name") or "")
        out["commit"] = {
            "message": strip_emails(message),
            "author": {"name": strip_emails(name)},
            "committer": {"date": _committed(dict(item))},
        }
    return out


def _repo(value: Any) -> str:
    if not isinstance(value, str) or not _REPO.match(value) or ".." in value:
        raise CapabilityError(
            "HZH102", f"github: not a repository owner/name: {value!r}", "e.g. repo: octo/app"
        )
    return value


def _login(user: Any) -> str | None:
    return str(user["login"]) if isinstance(user, dict) and user.get("login") else None


def _body(text: Any) -> str:
    return strip_emails(str(text or ""))[:_BODY_CHARS]


def _committed(item: dict[str, Any]) -> str | None:
    commit = item.get("commit") or {}
    value = (commit.get("committer") or {}).get("date")
    return str(value) if value else None


def _moment(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return parse_ts(value)
    except ValueError:
        return None


def _before(value: Any, start: datetime) -> bool:
    moment = _moment(value)
    return moment is not None and moment < start


def _inside(value: Any, window: Window) -> bool:
    moment = _moment(value)
    return moment is not None and window.contains(moment)


def github_code_host(client: GitHubClient) -> GitHubSource:
    """``code-host`` on GitHub."""
    return GitHubSource("code-host", client, _CODE_HOST)


def github_tracker(client: GitHubClient) -> GitHubSource:
    """``tracker`` on GitHub (a repository's issues and pull requests)."""
    return GitHubSource("tracker", client, _TRACKER)
