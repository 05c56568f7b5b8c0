"""A full disk under the index: `hz` prints a code that says to free space, and loses nothing.

The child process lowers its file-size limit (RLIMIT_FSIZE) below the index file's
size (just above the 32 KiB of the WAL's shared-memory file) and runs `hz approve`
in-process, so SQLite's writes are refused as on a full disk while the spine's short
line still fits.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRIYA = ROOT / "fixtures" / "priya"
HZ = str(Path(sys.executable).with_name("hz"))
CHILD = textwrap.dedent(
    """
    import resource, signal, sys
    limit = int(sys.argv[1])
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    sys.argv = ["hz", *sys.argv[2:]]
    from heinzel.cli import main
    main()
    """
)


def test_a_full_disk_under_the_index_is_coded_and_nothing_is_lost(tmp_path: Path) -> None:
    """HZL053 with a hint to free space, no traceback; the approval kept in the spine."""
    root = tmp_path / "priya"
    shutil.copytree(PRIYA, root)
    env = {
        **os.environ,
        "HZ_HOME": str(root / "home"),
        "HZ_FIXTURE_SOURCES": str(root),
        "HZ_NOW": "2026-10-30T14:05:00Z",
    }

    def hz(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [HZ, *args], cwd=root, env=env, capture_output=True, text=True, check=False
        )

    assert hz("heinzel", "new", "--from", "weekly-report.prose.md").returncode == 0
    (spine,) = (root / "home" / "heinzel").glob("hz-*/session.jsonl")
    limit = 32768 + 256  # the WAL's shared-memory file (32 KiB) fits, few WAL frames do
    assert limit < (root / "home" / "heinzel" / "index.sqlite").stat().st_size
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(limit), "approve", "weekly-report"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert "Traceback" not in done.stderr
    assert done.returncode == 1
    assert done.stderr.startswith("HZL053: ")
    assert "free space" in done.stderr
    assert '"kind":"contract.approved"' in spine.read_text(encoding="utf-8")
    assert hz("heinzel", "reindex").returncode == 0
    assert "state:    asleep" in hz("heinzel", "show", "weekly-report").stdout
