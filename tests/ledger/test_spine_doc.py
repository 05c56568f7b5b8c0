"""docs/spine.md's own verifier, run as written against spines the ledger wrote."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ledger.spine import Spine
from ledger.verify import verify

DOC = Path(__file__).resolve().parents[2] / "docs" / "spine.md"
MARKER = "<!-- verifier:"


def clock() -> datetime:
    return datetime(2026, 10, 30, 15, 0, tzinfo=UTC)


def doc_verifier() -> str:
    text = DOC.read_text(encoding="utf-8")
    after = text[text.index(MARKER) :]
    start = after.index("```python\n") + len("```python\n")
    return after[start : after.index("```\n", start)]


def run_doc_verifier(tmp_path: Path, spine: Path) -> str:
    script = tmp_path / "verifier.py"
    script.write_text(doc_verifier(), encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(script), str(spine)], capture_output=True, text=True, check=True
    )
    return result.stdout.strip()


@pytest.fixture
def spine_path(tmp_path: Path) -> Path:
    """A spine with non-ASCII data, nesting, turns, keys and a contained torn tail."""
    directory = tmp_path / "hz-01"
    with Spine.open(directory, clock=clock) as spine:
        spine.append("turn.started", {"cause": "schedule", "ü": [1, {"b": None}]}, turn="t1")
        spine.append("lesson.recorded", {"lesson": "Risiken über die Zusammenfassung"},
                     turn="t1", key="hz-01@t1:lesson", short_text={"lesson"})  # fmt: skip
    with (directory / "session.jsonl").open("ab") as handle:
        handle.write(b'{"da')
    with Spine.open(directory, clock=clock) as spine:
        spine.append("turn.finished", {"usd": 0.31, "disposition": "drafted"}, turn="t1")
    return directory / "session.jsonl"


class TestDocVerifier:
    def test_the_doc_snippet_is_short(self) -> None:
        """The page promises about twenty lines of code."""
        assert len([line for line in doc_verifier().splitlines() if line.strip()]) <= 30

    def test_it_accepts_a_spine_the_ledger_wrote(self, tmp_path: Path, spine_path: Path) -> None:
        """Four lines (three appends and the torn-tail record) verify."""
        assert run_doc_verifier(tmp_path, spine_path) == "ok: 4 lines"

    def test_it_finds_the_seq_the_ledger_finds(self, tmp_path: Path, spine_path: Path) -> None:
        """A deleted line: both name seq 2."""
        lines = spine_path.read_bytes().split(b"\n")
        del lines[1]
        spine_path.write_bytes(b"\n".join(lines))
        first = verify(spine_path).first
        assert first is not None and first.seq == 2
        assert run_doc_verifier(tmp_path, spine_path).startswith("seq 2:")

    def test_it_reports_a_torn_tail(self, tmp_path: Path, spine_path: Path) -> None:
        """Bytes after the last newline are named at the next seq."""
        with spine_path.open("ab") as handle:
            handle.write(b'{"data"')
        assert run_doc_verifier(tmp_path, spine_path) == "seq 5: torn tail (no newline)"
