"""``hz system daemon tick|run`` as real processes."""

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
from tests.waits import HANG

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "priya"


def env(home: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HZ_")}
    return {
        **clean,
        "HZ_HOME": str(home),
        "HZ_NOW": "2026-10-30T14:05:00Z",
        "HZ_MODEL": "offline",
        "XDG_CONFIG_HOME": str(home / "config"),
    }


class TestDaemonCommands:
    """One tick prints its report; the loop ends cleanly on SIGTERM."""

    def test_tick_json_over_an_empty_home(self, tmp_path: Path) -> None:
        """Nothing to wake: an empty report, exit 0."""
        done = forkhz.run(
            [sys.executable, "-m", "heinzel", "system", "daemon", "tick", "--json"],
            env=env(tmp_path / "home"),
            capture_output=True,
            text=True,
            check=True,
        )
        report = json.loads(done.stdout)
        assert (report["woken"], report["fetches"], report["at"]) == (
            [],
            0,
            "2026-10-30T14:05:00.000Z",
        )

    @pytest.mark.kill
    def test_run_stops_on_sigterm_after_the_tick_in_progress(self, tmp_path: Path) -> None:
        """The first tick's line arrives, SIGTERM ends the loop with status 0."""
        with forkhz.Popen(
            [sys.executable, "-m", "heinzel", "system", "daemon", "run", "--interval", "600"],
            env=env(tmp_path / "home"),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        ) as process:
            assert process.stdout is not None
            first = process.stdout.readline()
            assert first.startswith("tick at 2026-10-30T14:05:00.000Z")
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=HANG) == 0

    @pytest.mark.kill
    def test_run_prints_each_tick_by_name_as_tick_does(self, tmp_path: Path) -> None:
        """The loop's report names who woke (`weekly-report: schedule -> drafted`), as
        `hz system daemon tick` does, not the id."""
        documents = shutil.copytree(FIXTURES, tmp_path / "priya")
        home = tmp_path / "home"
        here = {**env(home), "HZ_FIXTURE_SOURCES": str(documents)}
        for args in (
            ["heinzel", "new", "--from", "weekly-report.prose.md"],
            ["approve", "weekly-report"],
        ):
            forkhz.run(
                [sys.executable, "-m", "heinzel", *args],
                env=here,
                cwd=documents,
                check=True,
                capture_output=True,
            )
        with forkhz.Popen(
            [sys.executable, "-m", "heinzel", "system", "daemon", "run", "--interval", "600"],
            env={**here, "HZ_NOW": "2026-11-06T14:05:00Z"},  # Friday's slot is due
            cwd=documents,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        ) as process:
            assert process.stdout is not None
            assert process.stdout.readline().startswith("tick at 2026-11-06T14:05:00.000Z: 1 woken")
            woken = process.stdout.readline()
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=HANG) == 0
        assert woken == "  weekly-report: schedule -> drafted\n"


def test_a_turn_abandoned_with_a_text_error_is_reported_coded() -> None:
    """A turn the tick ran that ended abandoned max-resumes (its error a text, not a code)
    is reported as HZH222 with that text, never as an uncoded line."""
    from heinzel.cli.verbs import _failure_text

    ended = {"state": "abandoned", "reason": "max-resumes", "error": "interrupted 4 times in act"}
    first, hint = _failure_text("report-0", ended).splitlines()
    assert first == (
        "HZH222: report-0: its turn ended abandoned (max-resumes): interrupted 4 times in act"
    )
    assert hint.startswith("hint: ")
    coded = {"state": "failed", "reason": "HZE101", "error": "HZE101"}
    assert _failure_text("report-0", coded).startswith("HZE101: report-0: ")
