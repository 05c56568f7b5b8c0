"""The committed diagram is the one the table gives."""

from __future__ import annotations

from pathlib import Path

from machines.core.diagram import mermaid
from machines.core.table import TABLE

DOC = Path(__file__).resolve().parents[2] / "docs" / "turn-machine.md"


class TestDiagram:
    def test_the_committed_diagram_matches_the_table(self) -> None:
        """Regenerate with: python -m machines.core.diagram > docs/turn-machine.md."""
        assert DOC.read_text(encoding="utf-8") == mermaid()

    def test_every_row_and_source_is_an_arrow(self) -> None:
        """One arrow per (row, source)."""
        arrows = [line for line in mermaid().splitlines() if " --> " in line and " / " in line]
        assert len(arrows) == sum(len(row.sources) for row in TABLE)
