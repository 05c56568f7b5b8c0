"""A draft for a document in a deep folder (issue 13 leftovers), through the `hz` executable."""

from __future__ import annotations

import sys
from pathlib import Path

from machines import keys
from tests import forkhz
from tests.loop.conftest import Done


def _hz(cwd: Path, env: dict[str, str], minute: int, *args: str) -> Done:
    environ = {**env, "HZ_NOW": f"2026-10-30T14:{minute:02d}:00Z"}
    done = forkhz.run(
        [sys.executable, "-m", "heinzel", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env=environ,
    )
    return Done(done.returncode, done.stdout, done.stderr)


def test_a_deep_folder_drafts_and_approves(folder: Path, hz_env: dict[str, str]) -> None:
    """A source-changed wake drafting into a 250-character path places, is approved and
    settles: its draft key is shortened to fit the spine instead of failing HZL024."""
    deep = folder.joinpath(*(f"deepfolder{i:02d}" for i in range(20)))
    deep.mkdir(parents=True)
    for name in ("notes.txt", "report.md", "digest.prose.md"):
        (deep / name).write_bytes((folder / name).read_bytes())
    assert len(str(deep / "report.md")) > 250
    assert _hz(deep, hz_env, 1, "heinzel", "new", "--from", "digest.prose.md").code == 0
    assert _hz(deep, hz_env, 2, "approve", "notes-digest").code == 0
    tick = _hz(deep, hz_env, 3, "system", "daemon", "tick")
    assert tick.code == 0, tick.out + tick.err
    assert "source-changed -> drafted" in tick.out
    report = (deep / "report.md").read_text(encoding="utf-8")
    marker = next(line for line in report.splitlines() if line.startswith("<!-- hz:draft key="))
    key = marker.removeprefix("<!-- hz:draft key=").removesuffix(" -->")
    assert len(key) <= 200
    assert key.endswith(":report.md")
    drafts = _hz(deep, hz_env, 4, "drafts")
    assert str(deep / "report.md") in drafts.out
    kept = "\n".join(line for line in report.splitlines() if not line.startswith("🧝 DRAFT"))
    (deep / "report.md").write_text(kept + "\n", encoding="utf-8")
    learned = _hz(deep, hz_env, 5, "system", "daemon", "tick")
    assert learned.code == 0, learned.out + learned.err
    assert "approval -> approval read: nothing to learn" in learned.out, learned.out
    assert "hz:draft" not in (deep / "report.md").read_text(encoding="utf-8")


def test_a_key_that_fits_reads_as_before() -> None:
    """Keys within the cap keep the readable form every spine already holds."""
    key = keys.place_draft("hz-01", 1, "notes:" + "a" * 64, "file:/home/me/report.md")
    assert key == f"hz-01@v1@notes:{'a' * 64}@file:/home/me/report.md"
    long = keys.place_draft("hz-01", 1, "s" * 120, "file:/" + "d/" * 300 + "r.md")
    assert len(long) <= 200
    assert long.endswith(":r.md")
    assert long != keys.place_draft("hz-01", 1, "s" * 120, "file:/" + "e/" * 300 + "r.md")
