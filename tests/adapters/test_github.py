"""The GitHub adapters against a loopback GitHub: windows, ETags, pagination, rate limits."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from heinzel.capabilities.errors import CapabilityError
from heinzel.capabilities.github import (
    github_code_host,
    github_token,
    github_tracker,
)
from heinzel.capabilities.github_http import GitHubClient
from heinzel.capabilities.protocols import Window
from tests.adapters.github_server import FakeGitHub, commit, issue, pull

NOW = datetime(2026, 10, 30, 15, 0, tzinfo=UTC)
WEEK = Window.ending_at(NOW, timedelta(days=7))
PULLS = "/repos/octo/app/pulls"


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    server = FakeGitHub(
        routes={
            PULLS: [
                pull(9, None, "2026-10-30T10:00:00Z"),  # closed unmerged
                pull(8, "2026-10-29T10:00:00Z", "2026-10-29T10:00:00Z"),
                pull(7, "2026-10-20T10:00:00Z", "2026-10-28T10:00:00Z"),  # merged before
                pull(6, "2026-10-24T10:00:00Z", "2026-10-24T10:00:00Z"),
                pull(5, "2026-10-01T10:00:00Z", "2026-10-02T10:00:00Z"),
                pull(4, "2026-09-01T10:00:00Z", "2026-09-02T10:00:00Z"),
                pull(3, "2026-08-01T10:00:00Z", "2026-08-02T10:00:00Z"),
            ],
            "/repos/octo/app/commits": [
                commit("c" * 40, "2026-10-29T12:00:00Z", "Fix the login\n\nlong text"),
                commit("b" * 40, "2026-10-25T12:00:00Z", "Add exports", login=None),
                commit("a" * 40, "2026-10-01T12:00:00Z", "Old work"),
            ],
            "/repos/octo/app/issues": [
                issue(12, "2026-10-30T09:00:00Z", is_pull=True),
                issue(11, "2026-10-27T09:00:00Z", title="Exports fail on Safari"),
                issue(10, "2026-09-27T09:00:00Z"),
            ],
        }
    ).start()
    yield server
    server.stop()


def client(fake: FakeGitHub, tmp_path: Path, token: str | None = "ghp_secret") -> GitHubClient:
    return GitHubClient(token, base_url=fake.url, cache_dir=tmp_path / "http")


class TestMergedPullRequests:
    def test_only_prs_merged_in_the_window_oldest_first(
        self, fake: FakeGitHub, tmp_path: Path
    ) -> None:
        """Unmerged and earlier-merged PRs are left out; paging stops past the window."""
        got = github_code_host(client(fake, tmp_path)).fetch(
            "merged_pull_requests", {"repo": "octo/app"}, WEEK, now=NOW
        )
        assert [r["number"] for r in got.result] == [6, 8]
        assert got.result[0] == {
            "number": 6,
            "title": "Change 6",
            "author": "priya",
            "merged_at": "2026-10-24T10:00:00Z",
            "base": "main",
            "url": "https://github.com/octo/app/pull/6",
            "body": "Body of 6",
        }
        # pages of 2: [9, 8], [7, 6], [5, 4] and 5 was updated before the window: stop.
        assert [s.query.get("page") for s in fake.seen] == [None, ["2"], ["3"]]
        assert fake.seen[0].authorization == "token ghp_secret"

    def test_an_unmoved_source_costs_one_304(self, fake: FakeGitHub, tmp_path: Path) -> None:
        """The second fetch (a new process: a new client) sends If-None-Match, gets a 304."""
        first = github_code_host(client(fake, tmp_path)).fetch(
            "merged_pull_requests", {"repo": "octo/app"}, WEEK, now=NOW
        )
        fake.seen.clear()
        later = NOW + timedelta(hours=1)
        again = github_code_host(client(fake, tmp_path)).fetch(
            "merged_pull_requests",
            {"repo": "octo/app"},
            Window.ending_at(later, timedelta(days=7)),
            now=later,
        )
        assert fake.statuses() == [304]
        assert fake.seen[0].if_none_match is not None
        assert again.result == first.result
        assert again.fingerprints == first.fingerprints

    def test_a_moved_source_is_read_again(self, fake: FakeGitHub, tmp_path: Path) -> None:
        """A new merge changes the first page's ETag: a 200 and the new PR is there."""
        github_code_host(client(fake, tmp_path)).fetch(
            "merged_pull_requests", {"repo": "octo/app"}, WEEK, now=NOW
        )
        fake.routes[PULLS].insert(0, pull(10, "2026-10-30T11:00:00Z", "2026-10-30T11:00:00Z"))
        fake.seen.clear()
        got = github_code_host(client(fake, tmp_path)).fetch(
            "merged_pull_requests", {"repo": "octo/app"}, WEEK, now=NOW
        )
        assert fake.statuses()[0] == 200
        assert [r["number"] for r in got.result] == [6, 8, 10]

    def test_a_wider_window_reads_further_back(self, fake: FakeGitHub, tmp_path: Path) -> None:
        """A kept listing that does not reach back far enough is not revalidated but re-read."""
        github_code_host(client(fake, tmp_path)).fetch(
            "merged_pull_requests", {"repo": "octo/app"}, WEEK, now=NOW
        )
        fake.seen.clear()
        got = github_code_host(client(fake, tmp_path)).fetch(
            "merged_pull_requests",
            {"repo": "octo/app"},
            Window.ending_at(NOW, timedelta(days=100)),
            now=NOW,
        )
        assert fake.seen[0].if_none_match is None
        assert [r["number"] for r in got.result] == [3, 4, 5, 7, 6, 8]


class TestCommitsAndIssues:
    def test_merged_commits_in_the_window_without_emails(
        self, fake: FakeGitHub, tmp_path: Path
    ) -> None:
        """Commits in the window, first line as title, login or name as author, no e-mail."""
        got = github_code_host(client(fake, tmp_path)).fetch(
            "merged_commits", {"repo": "octo/app", "branch": "main"}, WEEK, now=NOW
        )
        assert [(r["title"], r["author"]) for r in got.result] == [
            ("Add exports", "Priya Raman"),
            ("Fix the login", "priya"),
        ]
        assert "@" not in str(got.result)
        assert fake.seen[0].query["sha"] == ["main"]

    def test_tracker_issues_updated_with_a_query(self, fake: FakeGitHub, tmp_path: Path) -> None:
        """Issues and PRs updated in the window; query filters by title or body."""
        tracker = github_tracker(client(fake, tmp_path))
        got = tracker.fetch("issues_updated", {"project": "octo/app"}, WEEK, now=NOW)
        assert [(r["key"], r["kind"]) for r in got.result] == [
            ("octo/app#11", "issue"),
            ("octo/app#12", "pull_request"),
        ]
        found = tracker.fetch(
            "issues_updated", {"project": "octo/app", "query": "safari"}, WEEK, now=NOW
        )
        assert [r["number"] for r in found.result] == [11]


class TestFailures:
    def _fetch(self, fake: FakeGitHub, tmp_path: Path) -> CapabilityError:
        with pytest.raises(CapabilityError) as caught:
            github_code_host(client(fake, tmp_path)).fetch(
                "merged_pull_requests", {"repo": "octo/app"}, WEEK, now=NOW
            )
        return caught.value

    def test_rate_limit_is_a_retryable_code_and_holds_until_reset(
        self, fake: FakeGitHub, tmp_path: Path
    ) -> None:
        """A 403 with remaining 0 is HZH160; the next fetch sends nothing before the reset."""
        fake.fail[PULLS] = 403
        error = self._fetch(fake, tmp_path)
        assert (error.code, error.retryable) == ("HZH160", True)
        assert "ghp_secret" not in str(error)
        del fake.fail[PULLS]
        assert self._fetch(fake, tmp_path).code == "HZH160"
        assert len(fake.seen) == 1

    def test_server_error_is_retryable(self, fake: FakeGitHub, tmp_path: Path) -> None:
        """A 502 is HZH161, retryable; nothing is kept."""
        fake.fail[PULLS] = 502
        error = self._fetch(fake, tmp_path)
        assert (error.code, error.retryable) == ("HZH161", True)

    def test_unknown_repo_and_bad_credentials(self, fake: FakeGitHub, tmp_path: Path) -> None:
        """A 404 is HZH163 and a 401 HZH162, neither retryable."""
        fake.routes.pop(PULLS)
        assert self._fetch(fake, tmp_path).code == "HZH163"
        fake.fail[PULLS] = 401
        error = self._fetch(fake, tmp_path)
        assert (error.code, error.retryable) == ("HZH162", False)

    def test_no_server_is_retryable(self, tmp_path: Path) -> None:
        """Nothing listening is HZH161, retryable, not a traceback."""
        gone = GitHubClient(None, base_url="http://127.0.0.1:9/", cache_dir=None, timeout_s=2)
        with pytest.raises(CapabilityError) as caught:
            github_code_host(gone).fetch("merged_commits", {"repo": "octo/app"}, WEEK, now=NOW)
        assert (caught.value.code, caught.value.retryable) == ("HZH161", True)

    def test_bad_repo_and_board_are_refused(self, fake: FakeGitHub, tmp_path: Path) -> None:
        """repo must be owner/name, a board owner/number; each refused with a hint, no request."""
        source = github_code_host(client(fake, tmp_path))
        with pytest.raises(CapabilityError) as caught:
            source.fetch("merged_commits", {"repo": "../etc"}, WEEK, now=NOW)
        assert caught.value.code == "HZH102"
        with pytest.raises(CapabilityError) as caught:
            github_tracker(client(fake, tmp_path)).fetch(
                "issues_updated", {"board": "Q4"}, WEEK, now=NOW
            )
        assert caught.value.code == "HZH102"
        assert fake.seen == []


class TestToken:
    def test_token_order(self) -> None:
        """token_env beats GH_TOKEN beats GITHUB_TOKEN; none and no gh on PATH: None."""
        env = {"PATH": "/nonexistent", "GH_TOKEN": "a", "GITHUB_TOKEN": "b", "MINE": "c"}
        assert github_token(env, variables=("MINE", "GH_TOKEN", "GITHUB_TOKEN")) == "c"
        assert github_token(env) == "a"
        assert github_token({"PATH": "/nonexistent", "GITHUB_TOKEN": "b"}) == "b"
        assert github_token({"PATH": "/nonexistent"}) is None

    def test_gh_auth_token_for_the_enterprise_host(self, tmp_path: Path) -> None:
        """Without a variable, gh auth token is asked for base_url's host."""
        gh = tmp_path / "gh"
        gh.write_text('#!/bin/sh\n[ "$4" = "ghe.example.com" ] && echo ghp_from_gh\n')
        gh.chmod(0o755)
        env = {"PATH": str(tmp_path)}
        assert github_token(env, base_url="https://ghe.example.com/api/v3/") == "ghp_from_gh"
        assert github_token(env) is None
