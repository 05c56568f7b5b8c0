"""The team mirror's plumbing against a real bare repository: lease commits in one process."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from heinzel.team.git import LEASE_PREFIX, Git


def test_lease_commits_are_written_in_one_git_process_and_push_as_leases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three lease records become three commits of the empty tree in one ``git`` process;
    pushed by compare-and-swap, they read back as the leases they say."""
    remote = tmp_path / "team.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(remote)], check=True)
    git = Git(
        tmp_path / "mirror.git", str(remote), "ana", lambda: datetime(2026, 10, 26, tzinfo=UTC)
    )
    git.ensure()
    runs: list[list[str]] = []
    real = subprocess.run

    def counted(args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        runs.append(list(args))
        return real(args, **kwargs)  # type: ignore[call-overload,no-any-return]

    monkeypatch.setattr(subprocess, "run", counted)
    messages = [f'{{"holder":"ana","token":{n}}}' for n in (1, 2, 3)]
    made = git.lease_commits(messages)
    assert len(runs) == 1
    monkeypatch.setattr(subprocess, "run", real)
    assert len(set(made)) == 3
    pushed = git.push([(f"{LEASE_PREFIX}t{n}", sha, None) for n, sha in enumerate(made)])
    assert len(pushed.accepted) == 3
    git.fetch()
    assert {tid: message for tid, (_, message) in git.leases().items()} == {
        f"t{n}": message for n, message in enumerate(messages)
    }
    fsck = real(["git", "-C", str(remote), "fsck", "--strict"], capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stderr
