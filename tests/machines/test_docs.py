"""Every HZM code the machines raise is documented, and every documented one is raised."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CODE = re.compile(r"\"(HZM\d{3})\"")


def raised() -> set[str]:
    return {
        code
        for path in (ROOT / "machines").rglob("*.py")
        for code in CODE.findall(path.read_text(encoding="utf-8"))
    }


def documented() -> set[str]:
    text = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    return set(re.findall(r"^\| `(HZM\d{3})` \|", text, re.MULTILINE))


class TestErrorDocs:
    def test_every_raised_code_has_a_row(self) -> None:
        """A code in machines/ without a row in docs/errors.md fails here."""
        assert raised() - documented() == set()

    def test_every_row_is_raised_somewhere(self) -> None:
        """A row for a code nothing raises is stale."""
        assert documented() - raised() == set()
