"""GitHub Projects boards for ``tracker.issues_updated {board}``, through GraphQL.

A board is ``owner/number``: the organization or user that owns the project and the
project's number (``https://github.com/orgs/octo/projects/5`` is ``octo/5``). Projects
(v2) are only in GitHub's GraphQL API, so `read_board` sends `QUERY` through
`GitHubClient.graphql` (githubkit's ``github.graphql``), 100 items a page following
``pageInfo.endCursor``, at most `MAX_PAGES` pages. Items cannot be ordered by update, so
every page is read at each recheck: one request per 100 items, and no 304 (GraphQL has no
conditional requests). An item counts as updated when the later of its own ``updatedAt``
(a field such as Status moved) and its content's lies in the window. Records: ``key``
(``owner/repo#number``, or ``draft:<title>``), ``number``, ``kind`` (``issue``,
``pull_request``, ``draft``), ``title``, ``state``, ``status`` (the Status field),
``author``, ``updated_at``, ``url``, ``body`` (no e-mail address, cut at 4000
characters), oldest first; ``query`` is a case-insensitive substring of title or body.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from heinzel.capabilities.errors import CapabilityError
from heinzel.capabilities.git import strip_emails
from heinzel.capabilities.github_http import GitHubClient
from heinzel.capabilities.protocols import Window
from ledger.event import parse_ts

__all__ = ["MAX_PAGES", "QUERY", "read_board"]

MAX_PAGES = 50
_BOARD = re.compile(r"^([A-Za-z0-9](?:[A-Za-z0-9-]{0,38}))/([1-9][0-9]{0,8})$")
_BODY_CHARS = 4000

QUERY = """
query($owner: String!, $number: Int!, $after: String) {
  repositoryOwner(login: $owner) {
    ... on Organization { projectV2(number: $number) { ...board } }
    ... on User { projectV2(number: $number) { ...board } }
  }
}
fragment board on ProjectV2 {
  title
  items(first: 100, after: $after) {
    pageInfo { hasNextPage endCursor }
    nodes {
      updatedAt
      status: fieldValueByName(name: "Status") {
        ... on ProjectV2ItemFieldSingleSelectValue { name }
      }
      content {
        __typename
        ... on Issue {
          number title state url updatedAt body
          author { login } repository { nameWithOwner }
        }
        ... on PullRequest {
          number title state url updatedAt body
          author { login } repository { nameWithOwner }
        }
        ... on DraftIssue { title updatedAt body }
      }
    }
  }
}
"""


def parse_board(value: Any) -> tuple[str, int]:
    """``owner/number`` as (owner, number); HZH102 for anything else."""
    found = _BOARD.match(value) if isinstance(value, str) else None
    if found is None:
        raise CapabilityError(
            "HZH102",
            f"github: a board is owner/number, not {value!r}",
            "e.g. board: octo/5 for https://github.com/orgs/octo/projects/5",
        )
    return found[1], int(found[2])


def read_board(
    client: GitHubClient, board: Any, args: Mapping[str, Any], window: Window
) -> list[dict[str, Any]]:
    """The board's items updated in ``window``, oldest first."""
    owner, number = parse_board(board)
    nodes: list[dict[str, Any]] = []
    after: str | None = None
    for _ in range(MAX_PAGES):
        data = client.graphql(QUERY, {"owner": owner, "number": number, "after": after})
        project = (data.get("repositoryOwner") or {}).get("projectV2")
        if not isinstance(project, dict):
            raise CapabilityError(
                "HZH163",
                f"GitHub has no board {owner}/{number} this token can read",
                "check board: (owner/number) and that the token can read the project",
            )
        items = project.get("items") or {}
        nodes += [n for n in items.get("nodes") or [] if isinstance(n, dict)]
        page = items.get("pageInfo") or {}
        after = page.get("endCursor")
        if not page.get("hasNextPage") or not after:
            break
    needle = str(args.get("query") or "").casefold()
    records = [_record(node) for node in nodes]
    return sorted(
        (
            r
            for r in records
            if r["updated_at"] is not None
            and window.contains(parse_ts(r["updated_at"]))
            and needle in f"{r['title']} {r['body']}".casefold()
        ),
        key=lambda r: str(r["updated_at"]),
    )


def _record(node: dict[str, Any]) -> dict[str, Any]:
    found = node.get("content")
    content: dict[str, Any] = found if isinstance(found, dict) else {}
    kind = {"Issue": "issue", "PullRequest": "pull_request"}.get(
        str(content.get("__typename")), "draft"
    )
    title = strip_emails(str(content.get("title") or ""))
    repo = (content.get("repository") or {}).get("nameWithOwner")
    moments = [m for m in (node.get("updatedAt"), content.get("updatedAt")) if _moment(m)]
    status: dict[str, Any] = node["status"] if isinstance(node.get("status"), dict) else {}
    author: dict[str, Any] = content["author"] if isinstance(content.get("author"), dict) else {}
    return {
        "key": f"{repo}#{content.get('number')}" if kind != "draft" else f"draft:{title[:80]}",
        "number": content.get("number"),
        "kind": kind,
        "title": title,
        "state": content.get("state"),
        "status": status.get("name"),
        "author": author.get("login"),
        "updated_at": max(moments, key=lambda m: parse_ts(str(m))) if moments else None,
        "url": content.get("url"),
        "body": strip_emails(str(content.get("body") or ""))[:_BODY_CHARS],
    }


def _moment(value: Any) -> bool:
    if not isinstance(value, str) or not value:
        return False
    try:
        parse_ts(value)
    except ValueError:
        return False
    return True
