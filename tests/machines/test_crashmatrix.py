"""The crash matrix: real processes killed at every durable boundary."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from machines.crashmatrix import run_matrix

pytestmark = [pytest.mark.kill, pytest.mark.slow]


class TestCrashMatrix:
    def test_the_drafting_turn_survives_a_crash_at_every_boundary(self, tmp_path: Path) -> None:
        """14 appends (a replay-safe call writes only its result) and 1 world write: every
        one killed, resumed, once and unspent."""
        report = run_matrix("machines.scenarios:drafting", tmp_path)
        assert report.failures == []
        assert report.boundaries == ["world-1", *(f"append-{n}" for n in range(1, 15))]

    def test_the_asking_turn_with_a_local_probe_survives_every_boundary(
        self, tmp_path: Path
    ) -> None:
        """Around the question's effect (before, between and after), it is asked once."""
        around = ["append-5", "append-6", "world-1", "append-7"]
        report = run_matrix("machines.scenarios:asking", tmp_path, crash_loop=False, select=around)
        assert (report.failures, report.boundaries) == (
            [],
            ["world-1", "append-5", "append-6", "append-7"],
        )

    def test_an_effect_without_a_probe_is_caught(self, tmp_path: Path) -> None:
        """The unsafe scenario places its draft twice after a crash, and the matrix says so."""
        report = run_matrix(
            "machines.scenarios:unprobed", tmp_path, stop_at_first_failure=True, crash_loop=False
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
                "machines.crashmatrix",
                "--child",
                "machines.scenarios:drafting",
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
