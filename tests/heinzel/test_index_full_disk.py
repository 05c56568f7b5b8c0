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

from tests import forkhz

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
        return forkhz.run(
            [HZ, *args], cwd=root, env=env, capture_output=True, text=True, check=False
        )

    assert hz("heinzel", "new", "--from", "weekly-report.prose.md").returncode == 0
    (spine,) = (root / "home" / "heinzel").glob("hz-*/session.jsonl")
    limit = 32768 + 256  # the WAL's shared-memory file (32 KiB) fits, few WAL frames do
    index = root / "home" / "heinzel" / "index.sqlite"
    # the next write lands past the limit: in the WAL (a process closes the index keeping
    # it, so what `new` wrote is there) or, once checkpointed, in the database file
    assert limit < max(index.stat().st_size, Path(f"{index}-wal").stat().st_size)
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


def test_sqlite_failures_are_told_apart_by_their_result_code(tmp_path: Path) -> None:
    """A refused write is HZL053, a failed lock or read HZL054, busy HZL052: by code, not text."""
    import sqlite3

    from ledger.index import sqlite_error

    def failure(code: int, name: str) -> sqlite3.OperationalError:
        error = sqlite3.OperationalError("disk I/O error")
        error.sqlite_errorcode = code
        error.sqlite_errorname = name
        return error

    index = tmp_path / "index.sqlite"
    assert sqlite_error(index, failure(778, "SQLITE_IOERR_WRITE")).code == "HZL053"
    assert sqlite_error(index, failure(13, "SQLITE_FULL")).code == "HZL053"
    shm = sqlite_error(index, failure(4618, "SQLITE_IOERR_SHMOPEN"))
    assert shm.code == "HZL054"
    assert "SQLITE_IOERR_SHMOPEN" in shm.message
    assert sqlite_error(index, failure(517, "SQLITE_BUSY_SNAPSHOT")).code == "HZL052"
    assert sqlite_error(index, failure(26, "SQLITE_NOTADB")).code == "HZL051"


def test_a_tick_on_a_full_disk_gives_the_writes_code_never_hzh003(tmp_path: Path) -> None:
    """`hz system daemon tick` under file size limits from the index's size up, so the disk
    fills at each of the tick's next writes in turn (the staging's among them): each run
    ends with a coded error or reports it, never `HZH003 not a Heinzelmännchen id:
    'sources'` (the staging's failure was logged under its part's name as if an id), and
    the staging's own failure is reported under ``sources`` with HZL053."""
    from tests.turns.conftest import CONTRACT

    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("ship the rounding fix\n", encoding="utf-8")
    (work / "report.md").write_text("# Report\n", encoding="utf-8")
    text = CONTRACT.format(render="always", done_when="every item of `notes` is covered")
    (work / "digest.prose.md").write_text(text, encoding="utf-8")
    home = tmp_path / "home"
    env = {**os.environ, "HZ_HOME": str(home), "HZ_CONFIG": "", "HZ_NOW": "2026-10-30T14:00:00Z"}
    for args in (("heinzel", "new", "--from", "digest.prose.md"), ("approve", "notes-digest")):
        made = forkhz.run([HZ, *args], cwd=work, env=env, capture_output=True, text=True)
        assert made.returncode == 0, made.stderr
    kept = tmp_path / "kept"
    shutil.copytree(home, kept)
    wal = home / "heinzel" / "index.sqlite-wal"
    size = max(wal.stat().st_size, (home / "heinzel" / "index.sqlite").stat().st_size)
    staged = []
    for extra in range(8_000, 40_000, 8_000):
        shutil.rmtree(home)
        shutil.copytree(kept, home)
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(size + extra), "system", "daemon", "tick"],
            cwd=work,
            env={**env, "HZ_NOW": "2026-10-30T14:05:00Z"},
            capture_output=True,
            text=True,
            check=False,
        )
        assert "HZH003" not in done.stderr and "Traceback" not in done.stderr, done.stderr
        assert "HZL053: " in done.stderr, done.stderr
        staged.append("HZL053: sources: " in done.stderr)
    assert any(staged), "no limit made the staging's index write fail"
