"""ledger.fsyncs: an fsync on the process's one worker thread, waited for by its caller."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from ledger import fsyncs
from tests.waits import HANG


def _workers() -> int:
    return sum(thread.name == "hz-fsync" for thread in threading.enumerate())


class TestBegin:
    def test_the_fsync_ends_and_every_call_shares_one_thread(self, tmp_path: Path) -> None:
        """Many fsyncs begun and waited for run on one worker thread, none on a new one."""
        fd = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            for _ in range(20):
                os.write(fd, b"x")
                assert fsyncs.begin(fd).wait() is None
        finally:
            os.close(fd)
        assert _workers() == 1

    def test_the_error_of_the_fsync_is_given_to_the_caller(self, tmp_path: Path) -> None:
        """An fsync that fails (a closed descriptor) hands its OSError to `wait`."""
        fd = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT, 0o600)
        os.close(fd)
        error = fsyncs.begin(fd).wait()
        assert isinstance(error, OSError)

    def test_a_forked_child_makes_its_own_worker(self, tmp_path: Path) -> None:
        """After a fork the child, which has no worker thread, starts one and its fsyncs
        end (a child waiting on its parent's thread would hang)."""
        script = f"""
import os, sys
from ledger import fsyncs
fd = os.open({str(tmp_path / "f")!r}, os.O_WRONLY | os.O_CREAT, 0o600)
assert fsyncs.begin(fd).wait() is None
pid = os.fork()
if pid == 0:
    os._exit(0 if fsyncs.begin(fd).wait() is None else 1)
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
"""
        done = subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            timeout=HANG,
            check=False,
            env={**os.environ, "PYTHONPATH": os.getcwd()},
        )
        assert (done.returncode, done.stdout.strip()) == (0, "0"), done.stderr
