"""The commits hz writes to the team repository are dated by the injected clock."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path

from tests.team.test_two_machines import CONTRACT, Machine

NOW = datetime(2026, 10, 26, 9, 5, tzinfo=UTC)


def test_lease_and_state_commits_carry_hz_now(tmp_path: Path) -> None:
    """A tick under `HZ_NOW` pushes a lease and `hz/state`: both commits' author and
    committer dates are `HZ_NOW`, not the wall clock, so a test fixes them too."""
    remote = tmp_path / "team.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    subprocess.run(
        ["git", "-C", str(remote), "symbolic-ref", "HEAD", "refs/heads/main"], check=True
    )
    (tmp_path / "daily-digest.prose.md").write_text(CONTRACT, encoding="utf-8")
    ana = Machine(tmp_path, "ana", remote)
    ana.hz(NOW, "heinzel", "new", "--from", str(tmp_path / "daily-digest.prose.md"))
    ana.hz(NOW, "approve", "daily-digest")
    ana.hz(NOW, "system", "daemon", "tick")
    refs = subprocess.run(
        [
            "git",
            "-C",
            str(remote),
            "for-each-ref",
            "--format=%(refname) %(authordate:unix) %(committerdate:unix)",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    dated = {line.split()[0]: line.split()[1:] for line in refs if line}
    assert "refs/heads/hz/state" in dated
    assert any(ref.startswith("refs/hz/lease/") for ref in dated)
    stamp = str(int(NOW.timestamp()))
    assert dated == {ref: [stamp, stamp] for ref in dated}
