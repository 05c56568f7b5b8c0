"""The suite gives the processes its tests start a user's Ctrl-C, however it was started."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent

PROBE = """
import signal, subprocess, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a background job (`make test &`) starts
import tests.conftest
child = "import signal as s, sys; sys.exit(s.getsignal(s.SIGINT) is not s.default_int_handler)"
sys.exit(subprocess.run([sys.executable, "-c", child]).returncode)
"""


def test_a_run_started_with_sigint_ignored_gives_its_processes_ctrl_c() -> None:
    """A test worker that inherited SIGINT ignored starts processes that take SIGINT as a
    user's shell leaves it (Python's KeyboardInterrupt), so the Ctrl-C tests prove Ctrl-C
    instead of waiting out a timeout."""
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, check=False)
    assert done.returncode == 0
