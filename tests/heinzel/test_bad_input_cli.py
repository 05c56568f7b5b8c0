"""Bad input through `hz` gets a code, never a traceback."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRIYA = ROOT / "fixtures" / "priya"
HZ = str(Path(sys.executable).with_name("hz"))


@pytest.fixture(scope="module")
def approved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Priya's folder with weekly-report created and approved by the real ``hz``, once per
    module, kept as approved beside it (``pristine``)."""
    root = tmp_path_factory.mktemp("bad-input") / "priya"
    shutil.copytree(PRIYA, root)
    for args in (
        ["heinzel", "new", "--from", "weekly-report.prose.md"],
        ["approve", "weekly-report"],
    ):
        assert _hz(root, *args).returncode == 0
    shutil.copytree(root, root.parent / "pristine", symlinks=True)
    return root


@pytest.fixture
def root(approved: Path) -> Path:
    """The approved folder put back as approved, in its place (its home names the
    documents by their paths)."""
    shutil.rmtree(approved)
    shutil.copytree(approved.parent / "pristine", approved, symlinks=True)
    return approved


def _hz(
    root: Path, *args: str | bytes, now: str = "2026-10-30T14:05:00Z"
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "HZ_HOME": str(root / "home"),
        "HZ_FIXTURE_SOURCES": str(root),
        "HZ_NOW": now,
    }
    return subprocess.run(
        [HZ, *args], cwd=root, env=env, capture_output=True, text=True, check=False
    )


def _code(done: subprocess.CompletedProcess[str]) -> tuple[int, str]:
    assert "Traceback" not in done.stderr
    return done.returncode, done.stderr.split(":")[0]


def test_a_chat_message_that_is_not_utf8(root: Path) -> None:
    """A chat of bytes that are not UTF-8 is refused before any command runs (HZH345, bad
    usage): nothing reaches the inbox."""
    assert _code(_hz(root, "heinzel", "chat", "weekly-report", b"\xff\xfe bad")) == (2, "HZH345")
    assert not list((root / "home").rglob("inbox/rq-*.json"))


@pytest.mark.parametrize(
    "args",
    [
        ("heinzel", "retry", "weekly-report", b"\xff"),
        ("heinzel", "show", b"weekly-\xed\xa0\x80report"),
        ("heinzel", "wake", "weekly-report", "--message", b"caf\xe9"),
        ("--home", b"/tmp/\xff", "heinzel", "list"),
        ("approve", b"\xc3"),
    ],
)
def test_an_argument_that_is_not_utf8_is_a_coded_refusal(
    root: Path, args: tuple[str | bytes, ...]
) -> None:
    """Any argument of bytes that are not UTF-8 (here `retry`'s hint, which used to print a
    UnicodeEncodeError traceback) is HZH345 with exit 2, the bytes shown escaped, and the
    spine untouched."""
    spine = next((root / "home").rglob("session.jsonl"))
    before = spine.read_bytes()
    done = _hz(root, *args)
    assert _code(done) == (2, "HZH345")
    assert "\nhint: " in done.stderr and "\\x" in done.stderr
    assert spine.read_bytes() == before


def test_dismissing_a_huge_lesson_number(root: Path) -> None:
    """`hz heinzel dismiss NAME <a huge number>` is HZH078 (no such lesson)."""
    done = _hz(root, "heinzel", "dismiss", "weekly-report", "9" * 30)
    assert _code(done) == (1, "HZH078")


def test_hz_now_before_the_year_1000(root: Path) -> None:
    """`HZ_NOW` before the year 1000 is HZH004."""
    done = _hz(root, "heinzel", "wake", "weekly-report", now="0999-01-01T00:00:00Z")
    assert _code(done) == (1, "HZH004")
