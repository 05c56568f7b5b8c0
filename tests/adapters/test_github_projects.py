"""GitHub Projects boards through GraphQL (``tracker.issues_updated {board}``), against the
loopback GitHub answering the board query in the GraphQL API's shape, and through ``hz``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from heinzel.capabilities.errors import CapabilityError
from heinzel.capabilities.github import github_tracker
from heinzel.capabilities.github_http import GitHubClient
from tests.adapters.github_server import FakeGitHub, board_item
from tests.adapters.test_github import NOW, WEEK
from tests.adapters.test_github_cli import TOKEN, hz

BOARD = [
    board_item(1, "2026-10-29T09:00:00Z", status="Done", title="Refund totals"),
    board_item(2, "2026-09-01T09:00:00Z", status="Todo", title="Ancient"),
    # the issue is old, but its Status moved this week
    board_item(
        3, "2026-09-02T09:00:00Z", status="In Progress", item_updated_at="2026-10-28T09:00:00Z"
    ),
    board_item(4, "2026-10-27T09:00:00Z", kind="PullRequest", title="Export fix"),
    board_item(5, "2026-10-26T09:00:00Z", kind="DraftIssue", title="Plan Q4"),
]


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    server = FakeGitHub(boards={"octo/5": BOARD}).start()
    yield server
    server.stop()


class TestBoards:
    def test_items_updated_in_the_window_across_pages(
        self, fake: FakeGitHub, tmp_path: Path
    ) -> None:
        """Three GraphQL pages of two are read (one POST each, with the board's owner and
        number and the cursor); the items updated this week come oldest first, a moved
        Status counting as an update."""
        source = github_tracker(GitHubClient("ghp_secret", base_url=fake.url, cache_dir=tmp_path))
        got = source.fetch("issues_updated", {"board": "octo/5"}, WEEK, now=NOW)
        assert [(s.path, s.status) for s in fake.seen] == [("/graphql", 200)] * 3
        assert [q["variables"]["after"] for q in fake.queries] == [None, "2", "4"]
        assert {q["variables"]["owner"] for q in fake.queries} == {"octo"}
        assert {q["variables"]["number"] for q in fake.queries} == {5}
        assert {s.authorization for s in fake.seen} == {"token ghp_secret"}
        rows = [(r["key"], r["kind"], r["status"]) for r in got.result]
        assert rows == [
            ("draft:Plan Q4", "draft", "Todo"),
            ("octo/app#4", "pull_request", "Todo"),
            ("octo/app#3", "issue", "In Progress"),
            ("octo/app#1", "issue", "Done"),
        ]

    def test_a_query_filters_titles_and_bodies(self, fake: FakeGitHub, tmp_path: Path) -> None:
        """``query`` keeps the items whose title or body holds it, whatever the case."""
        source = github_tracker(GitHubClient(None, base_url=fake.url, cache_dir=tmp_path))
        got = source.fetch("issues_updated", {"board": "octo/5", "query": "REFUND"}, WEEK, now=NOW)
        assert [r["title"] for r in got.result] == ["Refund totals"]

    def test_an_unknown_board_is_hzh163(self, fake: FakeGitHub, tmp_path: Path) -> None:
        """GraphQL's NOT_FOUND error for a project number is HZH163, not retryable."""
        source = github_tracker(GitHubClient(None, base_url=fake.url, cache_dir=tmp_path))
        with pytest.raises(CapabilityError) as caught:
            source.fetch("issues_updated", {"board": "octo/9"}, WEEK, now=NOW)
        assert (caught.value.code, caught.value.retryable) == ("HZH163", False)

    @pytest.mark.parametrize(("status", "code"), [(403, "HZH160"), (502, "HZH161")])
    def test_rate_limit_and_server_errors_are_retryable(
        self, tmp_path: Path, status: int, code: str
    ) -> None:
        """A 403 with no requests left is HZH160 and a 502 HZH161, both retryable."""
        server = FakeGitHub(boards={"octo/5": BOARD}, fail={"/graphql": status}).start()
        try:
            source = github_tracker(GitHubClient(None, base_url=server.url, cache_dir=tmp_path))
            with pytest.raises(CapabilityError) as caught:
                source.fetch("issues_updated", {"board": "octo/5"}, WEEK, now=NOW)
        finally:
            server.stop()
        assert (caught.value.code, caught.value.retryable) == (code, True)

    @pytest.mark.parametrize(
        ("error", "code", "retryable"),
        [
            ({"type": "RATE_LIMITED", "message": "API rate limit exceeded"}, "HZH160", True),
            ({"type": "INSUFFICIENT_SCOPES", "message": "needs read:project"}, "HZH179", False),
        ],
    )
    def test_graphql_errors_in_the_answer(
        self, tmp_path: Path, error: dict[str, str], code: str, retryable: bool
    ) -> None:
        """GraphQL's errors come in a 200: RATE_LIMITED is HZH160 (retryable), any other
        HZH179 with GitHub's message."""
        server = FakeGitHub(boards={"octo/5": BOARD}, graphql_error=error).start()
        try:
            source = github_tracker(GitHubClient(None, base_url=server.url, cache_dir=tmp_path))
            with pytest.raises(CapabilityError) as caught:
                source.fetch("issues_updated", {"board": "octo/5"}, WEEK, now=NOW)
        finally:
            server.stop()
        assert (caught.value.code, caught.value.retryable) == (code, retryable)
        assert error["message"] in caught.value.message or code == "HZH160"

    @pytest.mark.parametrize("args", [{"board": "Q4"}, {"board": "octo/5", "project": "octo/app"}])
    def test_a_bad_board_is_refused_without_a_request(
        self, fake: FakeGitHub, tmp_path: Path, args: dict[str, str]
    ) -> None:
        """A board not written owner/number, or named beside a project, is HZH102."""
        source = github_tracker(GitHubClient(None, base_url=fake.url, cache_dir=tmp_path))
        with pytest.raises(CapabilityError) as caught:
            source.fetch("issues_updated", args, WEEK, now=NOW)
        assert caught.value.code == "HZH102"
        assert fake.seen == []


CONTRACT = """---
name: board-notes
kind: responsibility
hz:
  requires: [documents:write, tracker:read]
  inputs:
    board: {from: tracker.issues_updated, args: {board: octo/5}, window: 7d, recheck: 1h}
  outputs:
    section: {asset: "file:report.md"}
  publishes: [documents.place_draft]
---

### Goal

What moved on the board this week.

### Done when

- [ ] every item of `board` appears in a bullet
"""


def test_hz_drafts_from_a_projects_board(fake: FakeGitHub, tmp_path: Path) -> None:
    """new, approve, wake through `hz`: the draft names this week's board items only, the
    board is read with three GraphQL requests, and the token is in no file."""
    (tmp_path / "config.toml").write_text(
        f'[adapters.tracker]\nbackend = "github"\nbase_url = "{fake.url}"\n'
    )
    (tmp_path / "report.md").write_text("# Report\n")
    (tmp_path / "board-notes.prose.md").write_text(CONTRACT)
    assert hz(tmp_path, "heinzel", "new", "--from", "board-notes.prose.md").returncode == 0
    assert hz(tmp_path, "approve", "board-notes").returncode == 0
    woken = hz(tmp_path, "heinzel", "wake", "board-notes", "--json")
    assert woken.returncode == 0, woken.stderr
    assert json.loads(woken.stdout)["disposition"] == "drafted"
    report = (tmp_path / "report.md").read_text()
    for shown in ("Refund totals", "Export fix", "Plan Q4", "Item 3"):
        assert shown in report
    assert "Ancient" not in report
    assert fake.statuses() == [200, 200, 200]
    leaked = [
        p
        for p in (tmp_path / "home").rglob("*")
        if p.is_file() and TOKEN in p.read_text("utf-8", "replace")
    ]
    assert leaked == []
