"""A loopback GitHub: list endpoints in GitHub's documented shapes, with ETags, 304s,
``Link`` pagination, a rate limit and server errors, counting every request; and
``POST /graphql`` answering a Projects (v2) board query in the GraphQL API's shape
(``repositoryOwner.projectV2.items`` with ``pageInfo``, ``GRAPHQL_PAGE`` items a page, a
``NOT_FOUND`` error for an unknown board).

Run it as a script (``python github_server.py DIR``) to serve from another process: it
reads ``DIR/routes.json`` ({path: [item, ...]}), writes its port to ``DIR/port`` and its
request log to ``DIR/log.jsonl``.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

PER_PAGE = 2
GRAPHQL_PAGE = 2


@dataclass
class Seen:
    """One request as the server saw it."""

    path: str
    query: dict[str, list[str]]
    status: int
    if_none_match: str | None
    authorization: str | None


@dataclass
class FakeGitHub:
    """Routes ``/repos/o/r/pulls`` (and the like) to lists of items, paged ``PER_PAGE`` at
    a time; ``fail`` maps a path to a status to answer instead (403 means rate limited)."""

    routes: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    boards: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    queries: list[dict[str, Any]] = field(default_factory=list)
    graphql_error: dict[str, Any] | None = None
    fail: dict[str, int] = field(default_factory=dict)
    raw: dict[str, tuple[int, dict[str, str], dict[str, Any]]] = field(default_factory=dict)
    """A path answered exactly so: status, headers (no rate-limit ones added), JSON body."""
    seen: list[Seen] = field(default_factory=list)
    log: Path | None = None
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}/"

    def start(self) -> FakeGitHub:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                fake.answer(self)

            def do_POST(self) -> None:
                fake.answer(self)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def statuses(self) -> list[int]:
        return [s.status for s in self.seen]

    def answer(self, handler: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(handler.path)
        query = parse_qs(parts.query)
        status, headers, body = self._respond(parts.path, query, handler)
        seen = Seen(
            parts.path,
            query,
            status,
            handler.headers.get("If-None-Match"),
            handler.headers.get("Authorization"),
        )
        self.seen.append(seen)
        if self.log is not None:
            with self.log.open("a", encoding="utf-8") as out:
                out.write(json.dumps(seen.__dict__) + "\n")
        handler.send_response(status)
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def _respond(
        self, path: str, query: dict[str, list[str]], handler: BaseHTTPRequestHandler
    ) -> tuple[int, dict[str, str], bytes]:
        base = {
            "Content-Type": "application/json; charset=utf-8",
            "X-RateLimit-Limit": "5000",
            "X-RateLimit-Remaining": "4999",
            "X-RateLimit-Reset": "4102444800",
            "X-GitHub-Media-Type": "github.v3; format=json",
        }
        if path in self.raw:
            status, headers, message = self.raw[path]
            plain = {"Content-Type": "application/json; charset=utf-8", **headers}
            return status, plain, json.dumps(message).encode()
        if handler.command == "POST" and path not in self.fail:
            return _graphql_answer(self, path, handler, base)
        failing = self.fail.get(path)
        if failing == 403:
            base["X-RateLimit-Remaining"] = "0"
            message = {
                "message": "API rate limit exceeded for user ID 1.",
                "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
            }
            return 403, base, json.dumps(message).encode()
        if failing is not None:
            return failing, base, json.dumps({"message": "Server Error"}).encode()
        if path not in self.routes:
            body = {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}
            return 404, base, json.dumps(body).encode()
        items = self.routes[path]
        page = int(query.get("page", ["1"])[0])
        chunk = items[(page - 1) * PER_PAGE : page * PER_PAGE]
        body = json.dumps(chunk).encode()
        etag = 'W/"' + hashlib.sha256(body + path.encode()).hexdigest()[:32] + '"'
        base["ETag"] = etag
        base["Cache-Control"] = "private, max-age=60, s-maxage=60"
        if handler.headers.get("If-None-Match") == etag:
            return 304, {k: v for k, v in base.items() if k != "Content-Type"}, b""
        links = []
        here = f"http://127.0.0.1:{handler.server.server_address[1]}{path}"
        rest = "&".join(f"{k}={v[0]}" for k, v in sorted(query.items()) if k != "page")
        last = max(1, -(-len(items) // PER_PAGE))
        if page < last:
            links.append(f'<{here}?{rest}&page={page + 1}>; rel="next"')
            links.append(f'<{here}?{rest}&page={last}>; rel="last"')
        if links:
            base["Link"] = ", ".join(links)
        return 200, base, body


def _graphql_answer(
    self: FakeGitHub, path: str, handler: BaseHTTPRequestHandler, base: dict[str, str]
) -> tuple[int, dict[str, str], bytes]:
    """``POST /graphql``: a board query answered from ``boards`` ("owner/number")."""
    length = int(handler.headers.get("Content-Length") or 0)
    request = json.loads(handler.rfile.read(length) or b"{}")
    self.queries.append(request)
    variables = request.get("variables") or {}
    if path != "/graphql" or "projectV2" not in str(request.get("query")):
        return 404, base, json.dumps({"message": "Not Found"}).encode()
    board = f"{variables.get('owner')}/{variables.get('number')}"
    if self.graphql_error is not None:
        return 200, base, json.dumps({"data": None, "errors": [self.graphql_error]}).encode()
    if board not in self.boards:
        answer = {
            "data": {"repositoryOwner": {"projectV2": None}},
            "errors": [
                {
                    "type": "NOT_FOUND",
                    "path": ["repositoryOwner", "projectV2"],
                    "locations": [{"line": 4, "column": 5}],
                    "message": f"Could not resolve to a ProjectV2 with the number "
                    f"{variables.get('number')}.",
                }
            ],
        }
        return 200, base, json.dumps(answer).encode()
    items = self.boards[board]
    start = int(variables.get("after") or 0)
    chunk = items[start : start + GRAPHQL_PAGE]
    more = start + GRAPHQL_PAGE < len(items)
    project = {
        "title": f"Board {board}",
        "items": {
            "pageInfo": {"hasNextPage": more, "endCursor": str(start + len(chunk))},
            "nodes": chunk,
        },
    }
    body = {"data": {"repositoryOwner": {"projectV2": project}}}
    return 200, base, json.dumps(body).encode()


def board_item(
    number: int,
    updated_at: str,
    *,
    status: str | None = "Todo",
    kind: str = "Issue",
    item_updated_at: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A Projects (v2) item node as the board query selects it: the item's own
    ``updatedAt``, its Status value and its content (an Issue, a PullRequest or a
    DraftIssue)."""
    content: dict[str, Any] = {"__typename": kind, "title": f"Item {number}"}
    content["updatedAt"] = updated_at
    content["body"] = f"Details of {number}"
    if kind != "DraftIssue":
        content.update(
            number=number,
            state="OPEN",
            url=f"https://github.com/octo/app/issues/{number}",
            author={"login": "sam"},
            repository={"nameWithOwner": "octo/app"},
        )
    content.update(extra)
    return {
        "updatedAt": item_updated_at or updated_at,
        "status": {"name": status} if status else None,
        "content": content,
    }


def pull(number: int, merged_at: str | None, updated_at: str, **extra: Any) -> dict[str, Any]:
    """A pull request as ``GET /repos/{owner}/{repo}/pulls`` lists it (the fields hz reads)."""
    item = {
        "url": f"https://api.github.com/repos/octo/app/pulls/{number}",
        "html_url": f"https://github.com/octo/app/pull/{number}",
        "id": 1000 + number,
        "number": number,
        "state": "closed",
        "title": f"Change {number}",
        "user": {"login": "priya", "id": 7, "type": "User"},
        "body": f"Body of {number}",
        "created_at": "2026-10-01T09:00:00Z",
        "updated_at": updated_at,
        "closed_at": merged_at or updated_at,
        "merged_at": merged_at,
        "merge_commit_sha": f"{number:040x}",
        "base": {"ref": "main", "sha": "0" * 40},
        "head": {"ref": f"feature-{number}", "sha": "1" * 40},
        "labels": [],
        "draft": False,
    }
    item.update(extra)
    return item


def commit(sha: str, date: str, message: str, login: str | None = "priya") -> dict[str, Any]:
    """A commit as ``GET /repos/{owner}/{repo}/commits`` lists it."""
    return {
        "sha": sha,
        "commit": {
            "author": {"name": "Priya Raman", "email": "priya@example.com", "date": date},
            "committer": {"name": "GitHub", "email": "noreply@github.com", "date": date},
            "message": message,
        },
        "author": {"login": login} if login else None,
        "parents": [{"sha": "f" * 40}],
        "html_url": f"https://github.com/octo/app/commit/{sha}",
    }


def issue(number: int, updated_at: str, *, is_pull: bool = False, **extra: Any) -> dict[str, Any]:
    """An issue (or pull request) as ``GET /repos/{owner}/{repo}/issues`` lists it."""
    item: dict[str, Any] = {
        "number": number,
        "title": f"Issue {number}",
        "state": "open",
        "user": {"login": "sam"},
        "labels": [{"name": "bug", "color": "d73a4a"}],
        "updated_at": updated_at,
        "created_at": "2026-10-01T09:00:00Z",
        "html_url": f"https://github.com/octo/app/issues/{number}",
        "body": f"Details of {number}",
    }
    if is_pull:
        item["pull_request"] = {"url": f"https://api.github.com/repos/octo/app/pulls/{number}"}
    item.update(extra)
    return item


if __name__ == "__main__":
    folder = Path(sys.argv[1])
    fake = FakeGitHub(
        routes=json.loads((folder / "routes.json").read_text("utf-8")), log=folder / "log.jsonl"
    ).start()
    assert fake.server is not None
    (folder / "port.tmp").write_text(str(fake.server.server_address[1]))
    (folder / "port.tmp").rename(folder / "port")
    threading.Event().wait()
