"""A disk that refuses the write: the append fails with a code and nothing is lost.

The child process lowers its file-size limit (RLIMIT_FSIZE) just above the spine's
size, so the kernel refuses the next line part-way, as a full disk does.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

from ledger.spine import Spine, read_events, verify

CHILD = textwrap.dedent(
    """
    import json, resource, signal, sys
    from datetime import UTC, datetime
    from pathlib import Path
    from ledger.errors import LedgerError
    from ledger.spine import Spine

    def clock():
        return datetime(2026, 10, 30, 15, 0, tzinfo=UTC)

    directory = Path(sys.argv[1])
    with Spine.open(directory, clock=clock) as spine:
        for n in range(3):
            spine.append("test.note", {"n": n})
        size = (directory / "session.jsonl").stat().st_size
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size + 40, size + 40))
        try:
            spine.append("test.note", {"n": 3, "pad": "x" * 100})
        except LedgerError as error:
            print(json.dumps({"code": error.code, "closed": spine.closed}))
    """
)


def test_a_refused_write_is_coded_and_the_spine_stays_whole(tmp_path: Path) -> None:
    """HZL012, the partial line cut away, the chain whole, and appends go on after."""
    directory = tmp_path / "s"
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(directory)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout) == {"code": "HZL012", "closed": True}
    path = directory / "session.jsonl"
    report = verify(path)
    assert (report.ok, report.count) == (True, 3)

    def clock() -> datetime:
        return datetime(2026, 10, 30, 16, 0, tzinfo=UTC)

    with Spine.open(directory, clock=clock) as spine:
        spine.append("test.note", {"n": 4})
    assert [e.data["n"] for e in read_events(path)] == [0, 1, 2, 4]
    assert verify(path).ok
