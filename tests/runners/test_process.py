"""Bounded processes: own session, group kill past the timeout, leftovers killed, capped output."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from heinzel.runners.errors import RunnerError
from heinzel.runners.process import OUTPUT_CAP, resolve_executable, run_bounded

FAKE = str(Path(__file__).with_name("fake_agent.py"))


def run(tmp_path: Path, mode: str, timeout: float = 30.0, grace: float = 0.3, stdin: str = ""):
    return run_bounded(
        [sys.executable, FAKE, mode, f"cwd={tmp_path}"],
        stdin=stdin,
        cwd=tmp_path,
        env={"PATH": os.environ["PATH"], "LANG": "C.UTF-8"},
        timeout=timeout,
        grace=grace,
    )


class TestRunBounded:
    def test_stdin_reaches_the_child_and_stdout_comes_back(self, tmp_path: Path) -> None:
        """The prompt string is the child's standard input."""
        outcome = run(tmp_path, "stdin", stdin="hello agent")
        assert (outcome.returncode, outcome.stdout) == (0, b"from stdin: hello agent")
        assert not (outcome.timed_out or outcome.killed)

    def test_the_child_runs_in_its_own_session(self, tmp_path: Path) -> None:
        """start_new_session: the child leads a new process group, not ours."""
        code = "import os; print(os.getpgid(0) == os.getpid(), os.getsid(0) == os.getpid())"
        outcome = run_bounded(
            [sys.executable, "-c", code], cwd=tmp_path, env=dict(os.environ), timeout=30
        )
        assert outcome.stdout.split() == [b"True", b"True"]

    @pytest.mark.kill
    def test_past_the_timeout_the_whole_group_is_killed(
        self, tmp_path: Path, is_dead: Callable[[int], bool]
    ) -> None:
        """An agent and its grandchild that both ignore SIGTERM die by SIGKILL after the grace."""
        outcome = run(tmp_path, "hang", timeout=3.0, grace=0.2)
        assert outcome.timed_out and outcome.killed
        assert outcome.returncode == -signal.SIGKILL
        assert outcome.stdout == b"partial"
        assert is_dead(int((tmp_path / "grandchild.pid").read_text()))

    @pytest.mark.kill
    def test_sigterm_is_enough_for_a_polite_agent(self, tmp_path: Path) -> None:
        """An agent that obeys SIGTERM is not SIGKILLed."""
        outcome = run(tmp_path, "polite-hang", timeout=0.5, grace=30.0)
        assert outcome.timed_out and not outcome.killed
        assert outcome.returncode == -signal.SIGTERM
        assert outcome.exit_description() == "killed by SIGTERM"

    @pytest.mark.kill
    def test_a_child_left_behind_is_killed_when_the_agent_exits(
        self, tmp_path: Path, is_dead: Callable[[int], bool]
    ) -> None:
        """Whatever the agent left in its group dies when it exits normally."""
        outcome = run(tmp_path, "leave-child")
        assert outcome.returncode == 0 and not outcome.timed_out
        assert is_dead(int((tmp_path / "grandchild.pid").read_text()))

    @pytest.mark.kill
    def test_an_interrupted_wait_kills_the_group_and_reraises(
        self, tmp_path: Path, is_dead: Callable[[int], bool]
    ) -> None:
        """Ctrl-C (here an alarm that raises) while waiting kills the group, then propagates."""
        pid_file = tmp_path / "grandchild.pid"

        class Stop(Exception):
            pass

        def interrupt(signum: int, frame: object) -> None:
            if not pid_file.exists():  # not started yet: look again shortly
                signal.setitimer(signal.ITIMER_REAL, 0.05)
                return
            raise Stop

        previous = signal.signal(signal.SIGALRM, interrupt)
        try:
            signal.setitimer(signal.ITIMER_REAL, 0.05)
            with pytest.raises(Stop):
                run(tmp_path, "hang", timeout=600, grace=600)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        assert is_dead(int(pid_file.read_text()))

    @pytest.mark.kill
    def test_an_interrupt_while_the_readers_start_kills_the_group_too(
        self, tmp_path: Path, is_dead: Callable[[int], bool], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Ctrl-C that lands while the output readers are being started (the agent already
        running) still kills the agent's group, then propagates."""
        import heinzel.runners.process as process

        pid_file = tmp_path / "grandchild.pid"

        class Stop(Exception):
            pass

        real = process._Feed.start

        def interrupted(self: object) -> None:
            while not pid_file.exists():  # the agent and its child are running
                os.sched_yield()
            raise Stop

        monkeypatch.setattr(process._Feed, "start", interrupted)
        with pytest.raises(Stop):
            run(tmp_path, "hang", timeout=600, grace=600)
        monkeypatch.setattr(process._Feed, "start", real)
        assert is_dead(int(pid_file.read_text()))

    def test_stdout_is_capped_and_flagged(self, tmp_path: Path) -> None:
        """9 MiB of stdout keeps 8 MiB and says it dropped the rest."""
        outcome = run(tmp_path, "huge")
        assert len(outcome.stdout) == OUTPUT_CAP and outcome.stdout_truncated
        assert outcome.returncode == 0

    def test_stderr_is_capped_and_flagged(self, tmp_path: Path) -> None:
        """9 MiB of stderr is drained (no deadlock), capped, and stdout still arrives."""
        outcome = run(tmp_path, "huge-stderr")
        assert len(outcome.stderr) == OUTPUT_CAP and outcome.stderr_truncated
        assert outcome.stdout == b"report despite a noisy stderr"

    def test_the_exit_status_and_stderr_tail_are_kept(self, tmp_path: Path) -> None:
        """A failing child is an outcome with its status and stderr, not an exception."""
        outcome = run(tmp_path, "fail")
        assert outcome.exit_description() == "exit 3"
        assert outcome.stderr_tail() == "boom: the agent fell over"

    def test_an_unstartable_program_is_a_coded_error(self, tmp_path: Path) -> None:
        """A file that is not executable can't be started: HZR003."""
        script = tmp_path / "not-executable"
        script.write_text("#!/bin/sh\n")
        with pytest.raises(RunnerError) as caught:
            run_bounded([str(script)], cwd=tmp_path, env={}, timeout=5)
        assert caught.value.code == "HZR003"

    def test_the_duration_comes_from_the_injected_clock(self, tmp_path: Path) -> None:
        """duration_s is the clock's difference, so tests can fix it."""
        ticks = iter([100.0, 142.5])
        outcome = run_bounded(
            [sys.executable, "-c", "pass"],
            cwd=tmp_path,
            env={},
            timeout=30,
            clock=lambda: next(ticks),
        )
        assert outcome.duration_s == 42.5


class TestResolveExecutable:
    def test_a_name_on_path_resolves_to_an_absolute_path(self, tmp_path: Path) -> None:
        """Executables are resolved before the run changes directory."""
        program = tmp_path / "agent"
        program.write_text("#!/bin/sh\n")
        program.chmod(0o755)
        assert resolve_executable("r", "agent", {"PATH": str(tmp_path)}) == str(program)

    def test_a_missing_program_is_HZR002(self, tmp_path: Path) -> None:
        """Not on PATH: a coded error that names the setting to fix."""
        with pytest.raises(RunnerError) as caught:
            resolve_executable("mine", "no-such-agent", {"PATH": str(tmp_path)})
        assert caught.value.code == "HZR002" and "[runners.mine] executable" in caught.value.hint
