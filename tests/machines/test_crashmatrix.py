"""The crash matrix: real processes killed at every durable boundary."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from machines.crashkit.matrix import run_matrix

pytestmark = [pytest.mark.kill, pytest.mark.slow]


class TestCrashMatrix:
    def test_the_drafting_turn_survives_a_crash_at_every_boundary(self, tmp_path: Path) -> None:
        """14 appends (a replay-safe call writes only its result) and 1 world write: every
        one killed, resumed, once and unspent."""
        report = run_matrix("machines.crashkit.scenarios:drafting", tmp_path)
        assert report.failures == []
        assert report.boundaries == ["world-1", *(f"append-{n}" for n in range(1, 15))]

    def test_the_asking_turn_with_a_local_probe_survives_every_boundary(
        self, tmp_path: Path
    ) -> None:
        """Around the question's effect (before, between and after), it is asked once."""
        around = ["append-5", "append-6", "world-1", "append-7"]
        report = run_matrix(
            "machines.crashkit.scenarios:asking", tmp_path, crash_loop=False, select=around
        )
        assert (report.failures, report.boundaries) == (
            [],
            ["world-1", "append-5", "append-6", "append-7"],
        )

    def test_an_effect_without_a_probe_is_caught(self, tmp_path: Path) -> None:
        """The unsafe scenario places its draft twice after a crash, and the matrix says so."""
        report = run_matrix(
            "machines.crashkit.scenarios:unprobed",
            tmp_path,
            stop_at_first_failure=True,
            crash_loop=False,
        )
        assert not report.ok
        assert "world-1: world effects" in report.failures[0]
        assert ": 2}" in report.failures[0]


class TestCrashPointInAProcess:
    def test_after_kind_kills_the_process_right_after_that_event(self, tmp_path: Path) -> None:
        """HZ_CRASH_AT=after:effect.started: exit 137, effect.started is the last line."""
        env = {**os.environ, "HZ_CRASH_AT": "after:effect.started"}
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "machines.crashkit.matrix",
                "--child",
                "machines.crashkit.scenarios:drafting",
                str(tmp_path),
            ],
            env=env,
            check=False,
            capture_output=True,
        )
        last = (tmp_path / "spine" / "session.jsonl").read_bytes().splitlines()[-1]
        assert done.returncode == 137
        assert json.loads(last)["kind"] == "effect.started"
        assert not (tmp_path / "world.log").exists()


def _tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root``, by its path below it, with its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


SOME = ["world-1", "append-1", "append-7", "append-14"]
"""The drafting turn's world write and its first, a middle and its last append."""


class TestForkAndSpawn:
    def test_a_forked_run_killed_at_a_boundary_leaves_what_a_spawned_one_leaves(
        self, tmp_path: Path
    ) -> None:
        """The same boundaries and crash loop, forked and spawned: the same report and every
        file the killed and resumed processes left, byte for byte."""
        forked = run_matrix("machines.crashkit.scenarios:drafting", tmp_path / "fork", select=SOME)
        spawned = run_matrix(
            "machines.crashkit.scenarios:drafting", tmp_path / "spawn", select=SOME, spawn=True
        )
        assert (forked.mode, spawned.mode) == ("fork", "spawn")
        assert (forked.boundaries, forked.runs, forked.failures) == (
            spawned.boundaries,
            spawned.runs,
            spawned.failures,
        )
        assert forked.boundaries == SOME and forked.failures == []
        fork_files, spawn_files = _tree(tmp_path / "fork"), _tree(tmp_path / "spawn")
        assert "append-7/spine/session.jsonl" in fork_files
        assert fork_files == spawn_files

    def test_boundaries_run_at_once_leave_what_they_leave_one_at_a_time(
        self, tmp_path: Path
    ) -> None:
        """jobs=3 reports the boundaries in their order and leaves the same files as jobs=1."""
        one = run_matrix("machines.crashkit.scenarios:drafting", tmp_path / "one")
        three = run_matrix("machines.crashkit.scenarios:drafting", tmp_path / "three", jobs=3)
        assert (three.boundaries, three.runs, three.failures) == (
            one.boundaries,
            one.runs,
            one.failures,
        )
        assert one.failures == [] and len(one.boundaries) == 15
        assert _tree(tmp_path / "one") == _tree(tmp_path / "three")

    def test_a_scenario_module_that_starts_a_thread_is_not_forked(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A process with a second thread is not forked: every run is a fresh interpreter."""
        (tmp_path / "threaded_host.py").write_text(
            "import threading\n"
            "from machines.crashkit.scenarios import asking as scenario\n"
            "threading.Thread(target=threading.Event().wait, daemon=True).start()\n"
        )
        monkeypatch.setenv("PYTHONPATH", str(tmp_path))
        report = run_matrix(
            "threaded_host:scenario", tmp_path / "runs", select=["append-5"], crash_loop=False
        )
        assert (report.mode, report.boundaries, report.failures) == ("spawn", ["append-5"], [])
        assert json.loads((tmp_path / "runs" / "append-5" / "outcome.json").read_text()) == (
            json.loads((tmp_path / "runs" / "clean" / "outcome.json").read_text())
        )

    @pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="lists fds through /proc")
    def test_a_forked_run_holds_no_handle_of_a_run_beside_it(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """With jobs=3 every run starts with the same open files as the clean run did alone:
        no pipe of a run under way beside it."""
        (tmp_path / "fd_host.py").write_text(
            "import os\n"
            "from machines.crashkit.scenarios import drafting\n"
            "async def scenario(rig):\n"
            "    fds = sorted(int(fd) for fd in os.listdir('/proc/self/fd'))\n"
            "    (rig.workdir / 'fds.txt').write_text(repr(fds))\n"
            "    return await drafting(rig)\n"
        )
        monkeypatch.setenv("PYTHONPATH", str(tmp_path))
        report = run_matrix("fd_host:scenario", tmp_path / "runs", select=SOME, jobs=3)
        assert (report.mode, report.failures) == ("fork", [])
        seen = {p.parent.name: p.read_text() for p in (tmp_path / "runs").glob("*/fds.txt")}
        assert sorted(seen) == sorted(["clean", "loop", *SOME])
        assert set(seen.values()) == {seen["clean"]}


class TestFromTheCommandLine:
    @pytest.mark.parametrize("mode", ["fork", "spawn"])
    def test_a_run_that_fails_is_reported_with_its_stderr(self, tmp_path: Path, mode: str) -> None:
        """A scenario that raises: exit 1, and its traceback came through the run's stderr."""
        (tmp_path / "failing_host.py").write_text(
            "async def scenario(rig):\n    raise RuntimeError('the host broke')\n"
        )
        done = subprocess.run(
            [sys.executable, "-m", "machines.crashkit.matrix", "failing_host:scenario"]
            + (["--spawn"] if mode == "spawn" else []),
            env={**os.environ, "PYTHONPATH": str(tmp_path)},
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 1
        assert done.stdout.startswith(f"failing_host:scenario: 0 boundaries, 1 runs ({mode})")
        assert "clean: exit 1: Traceback" in done.stdout
        assert "RuntimeError: the host broke" in done.stdout

    def test_an_unsafe_effect_is_caught_with_boundaries_run_at_once(self) -> None:
        """--jobs 3 over the unprobed scenario: exit 1, the double placement named at world-1."""
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "machines.crashkit.matrix",
                "machines.crashkit.scenarios:unprobed",
                "--jobs",
                "3",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 1
        assert done.stdout.splitlines()[1].startswith("  world-1: world effects")
        assert ": 2}" in done.stdout

    def test_jobs_below_one_is_a_coded_error(self) -> None:
        """--jobs 0 runs nothing: exit 1 with HZM066 and a hint."""
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "machines.crashkit.matrix",
                "machines.crashkit.scenarios:drafting",
                "--jobs",
                "0",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 1
        assert done.stderr.startswith("HZM066:") and "hint:" in done.stderr
