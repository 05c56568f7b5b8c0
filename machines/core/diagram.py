"""The turn machine's diagram, generated from the table (mermaid).

``python -m machines.core.diagram > docs/turn-machine.md`` writes it; a test fails when
the committed file differs from what the table gives.
"""

from __future__ import annotations

import sys

from machines.core.table import TABLE, TERMINAL


def mermaid() -> str:
    """The page: a short header and a mermaid ``stateDiagram-v2`` of every row."""
    lines = [
        "# The turn machine",
        "",
        "Generated from `machines/core/table.py` by `python -m machines.core.diagram > "
        "docs/turn-machine.md`;",
        "`tests/machines/test_diagram.py` fails when this file differs from the code.",
        "Each arrow is `trigger / checkpoint kind appended before the state changes`.",
        "",
        "```mermaid",
        "stateDiagram-v2",
        "    [*] --> new",
    ]
    for row in TABLE:
        label = row.trigger
        if row.when_step is not None:
            label += f" [waited in {row.when_step}]"
        for source in row.sources:
            lines.append(f"    {source} --> {row.dest}: {label} / {row.checkpoint}")
    lines.extend(f"    {state} --> [*]" for state in TERMINAL)
    lines.append("```")
    return "\n".join(lines) + "\n"


def main() -> None:
    """Print the page on stdout."""
    sys.stdout.write(mermaid())


if __name__ == "__main__":
    main()
