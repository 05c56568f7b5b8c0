"""The git capability against real repositories built with fixed dates."""

from __future__ import annotations

import os
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from heinzel.capabilities.errors import CapabilityError
from heinzel.capabilities.git import GitCapability, git_environment, parse_merge, strip_emails
from heinzel.capabilities.protocols import Window

NOW = datetime(2026, 10, 30, 14, 0, tzinfo=UTC)
WEEK = Window.ending_at(NOW, timedelta(days=7))


def git(
    repo: Path, *args: str, author: str = "Priya Raman", when: str = "2026-10-20T09:00:00Z"
) -> None:
    env = {
        "PATH": os.environ["PATH"],
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": author,
        "GIT_AUTHOR_EMAIL": "someone@acme.test",
        "GIT_COMMITTER_NAME": "GitHub",
        "GIT_COMMITTER_EMAIL": "noreply@github.test",
        "GIT_AUTHOR_DATE": when,
        "GIT_COMMITTER_DATE": when,
    }
    subprocess.run(["git", "-C", str(repo), *args], env=env, check=True, capture_output=True)


def merge(repo: Path, branch: str, by: str, tip_when: str, when: str, *message: str) -> None:
    git(repo, "checkout", "-q", "-b", branch, "main")
    git(repo, "commit", "-q", "--allow-empty", "-m", f"work on {branch}", author=by, when=tip_when)
    git(repo, "checkout", "-q", "main")
    args = [part for text in message for part in ("-m", text)]
    git(repo, "merge", "-q", "--no-ff", *args, branch, author="Jonas Weber", when=when)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """acme/checkout's main branch over two weeks: merges, a direct commit, an old merge."""
    path = tmp_path_factory.mktemp("checkout")
    git(path, "init", "-q", "-b", "main")
    git(path, "commit", "-q", "--allow-empty", "-m", "Initial commit")
    merge(
        path,
        "old",
        "Mara Okafor",
        "2026-10-21T09:00:00Z",
        "2026-10-22T16:40:00Z",
        "Merge pull request #398 from acme/old",
        "Retry card authorisation once",
    )
    merge(
        path,
        "button",
        "Aylin Demir",
        "2026-10-26T09:00:00Z",
        "2026-10-26T10:05:00Z",
        "Merge pull request #402 from acme/button",
        "Express checkout: one-tap button",
    )
    git(
        path,
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "Fix typo, thanks lukas@acme.test",
        author="Lukas Brandt lukas@acme.test",
        when="2026-10-27T08:00:00Z",
    )
    merge(
        path,
        "fix/rounding",
        "Lukas Brandt",
        "2026-10-28T09:00:00Z",
        "2026-10-29T11:47:00Z",
        "Merge branch 'fix/rounding'",
    )
    merge(
        path,
        "autofill",
        "Aylin Demir",
        "2026-10-30T15:00:00Z",
        "2026-10-30T16:10:00Z",
        "Merge branch 'autofill' into 'main'",
        "Address autofill\n\nSee merge request acme/checkout!409",
    )
    return path


class TestMergedPullRequests:
    def test_merges_in_the_window_newest_first(self, repo: Path) -> None:
        """Only merges whose commit time is in the week; the author is the branch tip's."""
        got = GitCapability().fetch("merged_pull_requests", {"repo": str(repo)}, WEEK, now=NOW)
        assert [(r["number"], r["title"], r["author"], r["merged_at"]) for r in got.result] == [
            (None, "Merge branch 'fix/rounding'", "Lukas Brandt", "2026-10-29T11:47:00.000Z"),
            (402, "Express checkout: one-tap button", "Aylin Demir", "2026-10-26T10:05:00.000Z"),
        ]
        assert set(got.fingerprints) == {"items", "ids"}
        assert all(len(r["sha"]) == 40 for r in got.result)

    def test_the_next_week_sees_the_later_merge(self, repo: Path) -> None:
        """Stepping the window a week on picks up the GitLab-style merge with its number."""
        later = Window.ending_at(NOW + timedelta(days=7), timedelta(days=7))
        got = GitCapability().fetch("merged_pull_requests", {"repo": str(repo)}, later, now=NOW)
        assert [(r["number"], r["title"]) for r in got.result] == [(409, "Address autofill")]

    def test_the_same_fetch_is_deterministic(self, repo: Path) -> None:
        """Two fetches of the same window give the same fingerprints and cursor."""
        capability = GitCapability()
        one = capability.fetch("merged_pull_requests", {"repo": str(repo)}, WEEK, now=NOW)
        two = capability.fetch("merged_pull_requests", {"repo": str(repo)}, WEEK, now=NOW)
        assert (one.fingerprints, one.cursor) == (two.fingerprints, two.cursor)

    def test_relative_repo_resolves_against_the_base(self, repo: Path) -> None:
        """repo: checkout is read from the contract's folder."""
        got = GitCapability(repo.parent).fetch(
            "merged_pull_requests", {"repo": repo.name, "branch": "main"}, WEEK, now=NOW
        )
        assert len(got.result) == 2

    def test_inherited_git_variables_do_not_leak(self, repo: Path, tmp_path: Path) -> None:
        """A GIT_DIR in the caller's environment does not redirect the read."""
        environ = {"PATH": os.environ["PATH"], "GIT_DIR": str(tmp_path), "GIT_PAGER": "false"}
        got = GitCapability(environ=environ).fetch(
            "merged_pull_requests", {"repo": str(repo)}, WEEK, now=NOW
        )
        assert len(got.result) == 2


class TestMergedCommits:
    def test_first_parent_commits_in_the_window(self, repo: Path) -> None:
        """Merges and the direct commit, without e-mail addresses anywhere."""
        got = GitCapability().fetch("merged_commits", {"repo": str(repo)}, WEEK, now=NOW)
        assert [(r["title"], r["author"]) for r in got.result] == [
            ("Merge branch 'fix/rounding'", "Jonas Weber"),
            ("Fix typo, thanks", "Lukas Brandt"),
            ("Merge pull request #402 from acme/button", "Jonas Weber"),
        ]
        assert "@" not in repr(got.result)


class TestGitErrors:
    def code(
        self, capability: GitCapability, args: dict[str, object], window: Window | None = WEEK
    ) -> str:
        with pytest.raises(CapabilityError) as caught:
            capability.fetch("merged_commits", args, window, now=NOW)
        return caught.value.code

    def test_not_a_repository_is_hzh121(self, tmp_path: Path) -> None:
        """A plain folder, or one that is missing, is a coded error."""
        with pytest.raises(CapabilityError) as caught:
            GitCapability().fetch("merged_commits", {"repo": str(tmp_path)}, WEEK, now=NOW)
        assert (caught.value.code, caught.value.retryable) == ("HZH121", False)
        assert self.code(GitCapability(), {"repo": str(tmp_path / "nope")}) == "HZH121"

    def test_unknown_branch_is_hzh121(self, repo: Path) -> None:
        """A branch the repository lacks is named in the error."""
        assert self.code(GitCapability(), {"repo": str(repo), "branch": "nope"}) == "HZH121"

    def test_option_like_branch_is_hzh102(self, repo: Path) -> None:
        """A branch starting with a dash never reaches git as an option."""
        assert self.code(GitCapability(), {"repo": str(repo), "branch": "--output=x"}) == "HZH102"

    def test_missing_git_is_hzh120(self, repo: Path) -> None:
        """No git executable is a coded error with a hint to install it."""
        assert self.code(GitCapability(git="/nonexistent/git"), {"repo": str(repo)}) == "HZH120"

    def test_relative_repo_without_base_is_hzh116(self) -> None:
        """A relative repo with no contract folder is refused."""
        assert self.code(GitCapability(), {"repo": "checkout"}) == "HZH116"

    def test_no_window_is_hzh103(self, repo: Path) -> None:
        """Both methods search a window."""
        assert self.code(GitCapability(), {"repo": str(repo)}, None) == "HZH103"

    def test_a_hanging_git_times_out_with_hzh122(self, repo: Path, tmp_path: Path) -> None:
        """A git that does not answer within the timeout is stopped."""
        slow = tmp_path / "slow-git"
        slow.write_text("#!/bin/sh\nexec sleep 30\n", encoding="utf-8")
        slow.chmod(0o700)
        capability = GitCapability(git=str(slow), timeout_s=0.2)
        with pytest.raises(CapabilityError) as caught:
            capability.fetch("merged_commits", {"repo": str(repo)}, WEEK, now=NOW)
        assert (caught.value.code, caught.value.retryable) == ("HZH122", True)


class TestParsing:
    def test_github_subject_gives_number_and_title(self) -> None:
        """The title is the message's next line."""
        assert parse_merge("Merge pull request #7 from a/b\n\nAdd risks\n") == (7, "Add risks")

    def test_plain_merge_keeps_its_subject(self) -> None:
        """No number when the message names none."""
        assert parse_merge("Merge branch 'x'\n") == (None, "Merge branch 'x'")

    def test_emails_are_stripped(self) -> None:
        """Addresses with or without angle brackets go."""
        assert strip_emails("Priya <priya@acme.test>") == "Priya"
        assert strip_emails("ask p.r+x@mail.acme.test now") == "ask now"

    def test_environment_keeps_only_path(self) -> None:
        """No inherited GIT_ variable, HOME or pager survives."""
        env = git_environment({"PATH": "/bin", "GIT_DIR": "/x", "HOME": "/h", "PAGER": "less"})
        assert env["PATH"] == "/bin"
        assert "GIT_DIR" not in env and "HOME" not in env
        assert (env["GIT_CONFIG_NOSYSTEM"], env["PAGER"]) == ("1", "cat")
