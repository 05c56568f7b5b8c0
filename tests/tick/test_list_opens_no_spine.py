"""`hz heinzel list` never opens a spine (statement 7): the index keeps where each spine
ends (its watermark's `size`), so whether it is current is a `stat`. Seen with strace on
the real `hz` executable (skipped where strace cannot trace)."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from heinzel.store.home import Home
from tests.tick.homes import HZ, env, hz, make_home

STRACE = shutil.which("strace")


def opened(root: Path, *argv: str) -> list[str]:
    """The files one real `hz ARGV` opened (every open of the process and its threads)."""
    log = root / "strace.log"
    done = subprocess.run(
        [STRACE or "strace", "-f", "-e", "trace=open,openat", "-o", str(log), HZ, *argv],
        cwd=root,
        env=env(root),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [
        line.split('"', 2)[1]
        for line in log.read_text(encoding="utf-8").splitlines()
        if '"' in line and "ENOENT" not in line
    ]


@pytest.fixture
def woken(tmp_path: Path) -> Path:
    if STRACE is None:
        pytest.skip("strace is not installed")
    probe = subprocess.run([STRACE, "-o", "/dev/null", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip("strace cannot trace here")
    root, _ = make_home(tmp_path, 3)
    for name in ("report-0", "report-1", "report-2"):
        done = hz(root, "heinzel", "wake", name)
        assert done.returncode == 0, done.stderr
    return root


def spines(paths: list[str]) -> list[str]:
    return [path for path in paths if path.endswith("/session.jsonl")]


def test_list_after_wakes_opens_no_spine(woken: Path) -> None:
    assert spines([str(p) for p in (woken / "home").rglob("*.jsonl")]), "the wakes wrote spines"
    for argv in (("heinzel", "list"), ("heinzel", "list", "--json")):
        assert spines(opened(woken, *argv)) == [], argv


def test_an_index_made_before_sizes_learns_them_once(woken: Path) -> None:
    """An index whose watermarks say nothing of where the spines end (made before `size`,
    or last written by an older hz) is read as before, once: that listing stores the
    sizes, and the next one opens no spine."""
    index = Home(woken / "home").index_path
    conn = sqlite3.connect(index)
    with conn:
        conn.execute("UPDATE _watermarks SET size = NULL")
    conn.close()
    first = hz(woken, "heinzel", "list", "--json")
    assert first.returncode == 0, first.stderr
    assert spines(opened(woken, "heinzel", "list", "--json")) == []
    assert hz(woken, "heinzel", "list", "--json").stdout == first.stdout


def test_a_spine_that_grew_behind_its_watermark_is_caught_up(woken: Path) -> None:
    """A spine longer than its watermark says (a kill between the append and the index's
    update, here the index's row set back by hand) is read, not trusted by its stat."""
    index = Home(woken / "home").index_path
    conn = sqlite3.connect(index)
    with conn:
        conn.execute("UPDATE _watermarks SET size = size - 1")
    conn.close()
    assert spines(opened(woken, "heinzel", "list", "--json")), "a spine off its size is read"
    assert spines(opened(woken, "heinzel", "list", "--json")) == []
