"""Every HZC and HZH code raised in the heinzel package is documented in docs/errors.md."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CODE = re.compile(r"\"(HZ[CH]\d{3})\"")


def raised_codes() -> set[str]:
    return {
        code
        for path in (ROOT / "heinzel").rglob("*.py")
        for code in CODE.findall(path.read_text(encoding="utf-8"))
    }


class TestErrorDocs:
    def test_every_code_has_a_row(self) -> None:
        """A code in the source without a row in docs/errors.md fails here."""
        documented = set(re.findall(r"^\| `(HZ[CH]\d{3})` \|", _errors(), re.MULTILINE))
        assert raised_codes() - documented == set()

    def test_every_bad_fixture_code_is_documented(self) -> None:
        """The codes the bad fixtures expect are documented too."""
        names = (ROOT / "fixtures" / "contracts" / "bad").glob("*.prose.md")
        codes = {name.name.split("-")[0] for name in names}
        assert {c for c in codes if f"`{c}`" not in _errors()} == set()


def _errors() -> str:
    return (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")


def test_each_code_has_one_row() -> None:
    """No code is documented twice (two features must not share a code)."""
    rows = re.findall(r"^\| `(HZ[A-Z]\d{3})` \|", _errors(), re.MULTILINE)
    assert sorted({c for c in rows if rows.count(c) > 1}) == []
