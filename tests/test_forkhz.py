"""The fork server (tests/forkhz.py) gives what `subprocess` gives: the same exit status,
output, environment, working folder and argument vector, a crash point's 137 and a kill's
-9; only the imports were done before."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests import forkhz

PROBE = str(Path(__file__).with_name("forkhz_probe.py"))


def _both(args: list[str], **kwargs: object) -> tuple[subprocess.CompletedProcess[str], ...]:
    forked = forkhz.run(args, capture_output=True, text=True, **kwargs)  # type: ignore[arg-type]
    execd = subprocess.run(args, capture_output=True, text=True, check=False, **kwargs)  # type: ignore[call-overload]
    return forked, execd


@pytest.mark.skipif(os.environ.get("HZ_TESTS_EXEC") == "1", reason="the fork server is off")
def test_a_script_sees_the_same_process_forked_as_execd(tmp_path: Path) -> None:
    env = {"PATH": os.environ.get("PATH", ""), "ONLY": "this", "PROBE_EXIT": "3"}
    forked, execd = _both([sys.executable, PROBE, "a", "b c"], env=env, cwd=tmp_path, input="in")
    seen, expected = json.loads(forked.stdout), json.loads(execd.stdout)
    assert (
        (forked.returncode, forked.stderr) == (execd.returncode, execd.stderr) == (3, "to stderr\n")
    )
    for key in ("argv", "cwd", "env", "path0", "stdin"):
        assert seen[key] == expected[key], key
    assert seen["env"] == {**env, "LC_CTYPE": "C.UTF-8"}  # nothing of the test's or the server's
    assert seen["ppid"] != os.getpid()  # it was forked by the server, not started by us


@pytest.mark.parametrize("code", ["0", "5", "a sentence"])
def test_a_child_leaves_as_the_interpreter_does(tmp_path: Path, code: str) -> None:
    """A forked child leaves without freeing what the server imported (tests/forkhz.py's
    `_leave`), yet as the interpreter does: a thread that is not a daemon ends first, then
    the atexit handlers run, the streams are flushed and the status is the script's (a
    sentence is printed and is status 1)."""
    env = {"PATH": os.environ.get("PATH", ""), "PROBE_LATE": "1", "PROBE_EXIT": code}
    forked, execd = _both([sys.executable, PROBE], env=env, cwd=tmp_path)
    assert forked.stdout.splitlines()[1:] == ["thread ran", "atexit ran"]
    assert (forked.returncode, forked.stderr) == (execd.returncode, execd.stderr)
    assert forked.stdout.splitlines()[1:] == execd.stdout.splitlines()[1:]


def test_a_closed_stdout_is_said_and_its_status_as_when_execd(tmp_path: Path) -> None:
    """Output left in a buffer for a reader that has gone: the interpreter's exit says so
    and leaves with the same status, forked or exec'd."""
    script = tmp_path / "closed.py"
    script.write_text(  # buffered whatever PYTHONUNBUFFERED says: flushed as it leaves
        "import sys\nsys.stdout = open(1, 'w', closefd=False)\nprint('x')\n", encoding="utf-8"
    )
    results = []
    for start in (forkhz.Popen, subprocess.Popen):
        reader, writer = os.pipe()
        os.close(reader)
        with start([sys.executable, str(script)], stdout=writer, stderr=subprocess.PIPE) as child:
            os.close(writer)
            assert child.stderr is not None
            results.append((child.wait(timeout=30), b"BrokenPipeError" in child.stderr.read()))
    assert results == [(120, True), (120, True)]


def test_a_umask_given_is_the_childs_as_when_execd(tmp_path: Path) -> None:
    """A ``umask`` the server cannot give its forked child is exec'd instead: the child
    has the umask asked for, never the server's."""
    forked, execd = _both([sys.executable, PROBE], cwd=tmp_path, umask=0o077)
    assert json.loads(forked.stdout)["umask"] == json.loads(execd.stdout)["umask"] == 0o077


def test_hz_prints_and_exits_alike(tmp_path: Path) -> None:
    env = {**os.environ, "HZ_HOME": str(tmp_path / "home")}
    for args in (["--help"], ["no-such-command"], ["heinzel", "show", "nobody"]):
        forked, execd = _both([forkhz.HZ, *args], env=env, cwd=tmp_path)
        assert (forked.returncode, forked.stdout, forked.stderr) == (
            execd.returncode,
            execd.stdout,
            execd.stderr,
        ), args
    assert [r.returncode for r in _both([forkhz.HZ, "heinzel", "show", "nobody"], env=env)] == [
        1,
        1,
    ]


def test_a_crash_point_exits_137_and_a_kill_reads_minus_9(tmp_path: Path) -> None:
    crash = {**os.environ, "HZ_HOME": str(tmp_path / "home"), "HZ_CRASH_AT": "at:nowhere"}
    assert forkhz.run([forkhz.HZ, "--help"], env=crash, capture_output=True).returncode == 0
    with forkhz.Popen(
        [sys.executable, PROBE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=os.environ
    ) as slow:
        assert slow.poll() is None  # it waits on its stdin
        slow.send_signal(signal.SIGKILL)
        assert slow.wait(timeout=30) == -9
        assert slow.stdout is not None and slow.stdout.read() == b""
    priya = tmp_path / "priya"
    shutil.copytree(Path(__file__).parents[1] / "fixtures" / "priya", priya)
    home = {**os.environ, "HZ_HOME": str(priya / "home"), "HZ_FIXTURE_SOURCES": str(priya)}
    for args in (
        ["heinzel", "new", "--from", "weekly-report.prose.md"],
        ["approve", "weekly-report"],
    ):
        done = forkhz.run([forkhz.HZ, *args], env=home, cwd=priya, capture_output=True)
        assert done.returncode == 0, done.stderr
    crashed = forkhz.run(
        [forkhz.HZ, "heinzel", "wake", "weekly-report"],
        env={**home, "HZ_CRASH_AT": "append:1"},
        capture_output=True,
        cwd=priya,
    )
    assert crashed.returncode == 137, crashed.stderr
