"""The embedding example runs, and docs/embedding.md shows it verbatim."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from pathlib import Path

import pytest

from machines.examples import embed_asyncio

ROOT = Path(__file__).resolve().parents[2]


class TestEmbedding:
    def test_the_example_host_runs_two_tickets_and_a_wait(self) -> None:
        """T1 finishes, T2 waits for an answer and finishes once woken; one reply each."""
        result = asyncio.run(embed_asyncio.main())
        assert result == {
            "states": {"T1": "finished", "T2": "waiting", "T2 after the answer": "finished"},
            "sent": ["bot@reply:T1", "bot@reply:T2"],
        }

    def test_the_doc_includes_the_example_verbatim(self) -> None:
        """docs/embedding.md carries the file as it is."""
        source = (ROOT / "machines" / "examples" / "embed_asyncio.py").read_text(encoding="utf-8")
        doc = (ROOT / "docs" / "embedding.md").read_text(encoding="utf-8")
        assert f"```python\n{source}```" in doc


SNIPPETS = re.findall(
    r"```python\n(.*?)```", (ROOT / "docs" / "embedding.md").read_text("utf-8"), re.S
)


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[f"snippet-{n}" for n in range(len(SNIPPETS))])
def test_every_python_snippet_runs_as_written(snippet: str, tmp_path: Path) -> None:
    """Each ```python block of docs/embedding.md, alone in a fresh file and interpreter."""
    script = tmp_path / "snippet.py"
    script.write_text(snippet, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
