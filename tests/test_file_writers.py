"""Every file hz writes goes through `ledger.files`' private, no-follow writers: an `ast`
scan of ledger, machines and heinzel for the other ways to write a file (docs/spine.md,
"Files"), as tests/test_clock_reads.py scans for clock reads."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"}
"""``os.open`` flags that write (``O_RDONLY`` alone reads)."""
ALLOWED = {
    "ledger/files.py": "the private, no-follow writers themselves",
    "ledger/lock.py": "a spine's lock file: O_NOFOLLOW, 0600 checked after the open",
    "machines/crashkit/runs.py": "/dev/null as a crash run's standard output",
    "machines/examples/notes_agent.py": "an example host of the machine, not hz (embedding.md)",
    "heinzel/cli/demo.py": "the demo plays the user: it edits the user's own documents",
    "heinzel/capabilities/inplace.py": "a user's hard-linked document overwritten in place "
    "(O_NOFOLLOW, its inode checked after the open) behind a journal `write_atomic` wrote",
    "heinzel/runners/files.py": "a run's own file in its fresh 0700 directory: O_CREAT | "
    "O_EXCL | O_NOFOLLOW, 0600",
    "heinzel/team/git.py": "scratch commit objects in a 0700 temporary directory, hashed by "
    "git and removed with it",
}


def _mode(call: ast.Call, position: int) -> ast.expr | None:
    for keyword in call.keywords:
        if keyword.arg == "mode":
            return keyword.value
    return call.args[position] if len(call.args) > position else None


def _writes(mode: ast.expr | None, *, unknown: bool) -> bool:
    """Whether an open mode writes; ``unknown``: what a mode that is not a literal counts as."""
    if isinstance(mode, ast.Constant) and isinstance(mode.value, str):
        return any(letter in mode.value for letter in "awx+")
    return unknown and mode is not None


def _names(node: ast.expr) -> set[str]:
    return {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)} | {
        n.id for n in ast.walk(node) if isinstance(n, ast.Name)
    }


def file_writes(path: Path) -> list[str]:
    """Each ``open(..., "a"/"w"/"x")``, ``X.open("w")``, ``write_text``, ``write_bytes``
    and ``os.open`` with a write flag in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        call, what = node.func, ""
        if isinstance(call, ast.Name) and call.id == "open":
            what = "open" if _writes(_mode(node, 1), unknown=True) else ""
        elif isinstance(call, ast.Attribute) and call.attr in ("write_text", "write_bytes"):
            what = call.attr
        elif isinstance(call, ast.Attribute) and call.attr == "open":
            if isinstance(call.value, ast.Name) and call.value.id == "os":
                flags = node.args[1] if len(node.args) > 1 else None
                what = "os.open" if flags is not None and _names(flags) & WRITE_FLAGS else ""
            else:
                what = ".open" if _writes(_mode(node, 0), unknown=False) else ""
        if what:
            found.append(f"{what} (line {node.lineno})")
    return found


def test_every_file_hz_writes_goes_through_ledger_files() -> None:
    """No module writes a file but through `ledger.files` (0600 whatever the umask, never
    through a link), apart from the few named with their reason."""
    found = {
        str(path.relative_to(ROOT)): writes
        for package in ("ledger", "machines", "heinzel")
        for path in sorted((ROOT / package).rglob("*.py"))
        if (writes := file_writes(path)) and str(path.relative_to(ROOT)) not in ALLOWED
    }
    assert found == {}


def test_the_allowed_writers_still_write() -> None:
    """Each allowance is still needed (a module that stopped writing loses its pass)."""
    assert {name for name in ALLOWED if not file_writes(ROOT / name)} == set()


def test_the_scan_finds_every_form(tmp_path: Path) -> None:
    """The scan sees the forms it looks for, and not reads (so an empty answer means
    something)."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import os\nfrom pathlib import Path\n"
        "a = open('log', 'ab')\n"
        "b = open('log', mode=m)\n"
        "c = Path('x').open('w')\n"
        "Path('x').write_text('t')\n"
        "Path('x').write_bytes(b'')\n"
        "d = os.open('x', os.O_WRONLY | os.O_CREAT, 0o666)\n"
        "e = open('log')\n"
        "f = Path('x').open()\n"
        "g = os.open('x', os.O_RDONLY)\n"
        "h = Path('x').open('rb')\n",
        encoding="utf-8",
    )
    assert file_writes(probe) == [
        "open (line 3)",
        "open (line 4)",
        ".open (line 5)",
        "write_text (line 6)",
        "write_bytes (line 7)",
        "os.open (line 8)",
    ]
