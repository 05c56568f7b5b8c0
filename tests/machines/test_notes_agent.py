"""The second example host: a Pydantic AI agent loop driven through machines, crash-tested."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path


def test_the_notes_runner_writes_each_note_once(tmp_path: Path) -> None:
    """Run as a program, two requests end noted and the notes file holds two lines."""
    done = subprocess.run(
        [sys.executable, "-m", "machines.examples.notes_agent", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    result = ast.literal_eval(done.stdout.strip())
    assert result["states"] == {"r1": "finished noted", "r2": "finished noted"}
    assert (tmp_path / "notes.txt").read_text().splitlines() == [
        "notes@note:r1 buy milk (2 words)",
        "notes@note:r2 call the bank (3 words)",
    ]


def test_the_crash_matrix_runs_over_the_notes_runner_from_the_command_line(
    tmp_path: Path,
) -> None:
    """python -m machines.crashkit.matrix kills the runner at every boundary: no double note."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "machines.crashkit.matrix",
            "machines.examples.notes_agent:scenario",
            "--root",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("machines.examples.notes_agent:scenario: 15 boundaries")
    assert "0 failures" in done.stdout
    world = (tmp_path / "world-1" / "world.log").read_text().splitlines()
    assert world == ["notes@note:r1 buy milk and bread (4 words)"]


def crashmatrix(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m machines.crashkit.matrix ARGS`` as a user runs it, its output as text."""
    return subprocess.run(
        [sys.executable, "-m", "machines.crashkit.matrix", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_scenario_that_does_not_load_is_a_coded_error() -> None:
    """A module:function that cannot be imported exits 1 with HZM065 and a hint."""
    done = crashmatrix("no_such_host:scenario")
    assert done.returncode == 1
    assert done.stderr.startswith("HZM065:") and "hint:" in done.stderr


def test_a_module_without_its_function_is_told_to_name_it() -> None:
    """`python -m machines.crashkit.matrix my_host` (no :function) is HZM065 saying so, not
    "module ... has no attribute ''"."""
    done = crashmatrix("machines.examples.notes_agent")
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == (
        "HZM065: cannot load the scenario 'machines.examples.notes_agent': "
        "'machines.examples.notes_agent' names no function: write module:function"
    )
