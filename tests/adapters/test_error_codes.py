"""Every HZH1xx code the adapters (and discovery, whose codes share the band) raise is
documented in docs/errors.md, and no other."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODULES = [
    *sorted((ROOT / "heinzel" / "capabilities").glob("*.py")),
    ROOT / "heinzel" / "store" / "sources.py",
    ROOT / "heinzel" / "contract" / "model.py",
    ROOT / "heinzel" / "contract" / "compiler.py",
    ROOT / "heinzel" / "contract" / "semantics.py",
    ROOT / "heinzel" / "tick" / "discover.py",
]
CODE = re.compile(r"HZH1\d\d")


class TestErrorCodes:
    def test_raised_codes_equal_documented_codes(self) -> None:
        """The code scan and the table in docs/errors.md name the same codes."""
        raised = {code for path in MODULES for code in CODE.findall(path.read_text("utf-8"))}
        documented = set(
            re.findall(
                r"^\| `(HZH1\d\d)` \|", (ROOT / "docs" / "errors.md").read_text("utf-8"), re.M
            )
        )
        assert raised == documented

    def test_the_scan_finds_codes(self) -> None:
        """The scan itself sees the codes, so the test above can fail."""
        assert {"HZH101", "HZH133", "HZH151"} <= {
            code for path in MODULES for code in CODE.findall(path.read_text("utf-8"))
        }
