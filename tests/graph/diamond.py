"""A home of four Heinzelmännchen in a diamond (A -> B, A -> C, B and C -> D), each
reading the one before it by its output document, driven through the real ``hz``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests import forkhz

HZ = str(Path(sys.executable).with_name("hz"))
TAG = "🧝 DRAFT"


def contract(folder: Path, name: str, reads: dict[str, str], writes: str, alias: str = "") -> Path:
    inputs = [
        f"    {key}: {{from: documents.read, args: {{doc: 'file:{doc}'}}}}"
        for key, doc in reads.items()
    ]
    lines = [
        "---",
        f"name: {name}",
        "kind: responsibility",
        "hz:",
        "  requires: [documents:read, documents:write]",
        "  inputs:",
        *inputs,
        "  outputs:",
        f"    out: {{asset: 'file:{writes}'}}",
        "  publishes: [documents.place_draft]",
        "  agent: {max_usd: 0.5}",
        *([f"  alias: [{alias}]"] if alias else []),
        "---",
        "",
        "### Goal",
        "",
        f"Keep {writes} true.",
        "",
        "### Done when",
        "",
        "- [ ] it is true",
        "",
    ]
    path = folder / f"{name}.prose.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    (folder / writes).write_text(f"# {writes}\n", encoding="utf-8")
    return path


def aliased_reader(root: Path, spelled: str) -> Home:
    """``a`` (reads a-in.md, writes a.md) and ``b``, whose input ``up`` reads a.md by
    ``files.read`` spelled ``spelled`` (``links/../a.md``, ``links/soft.md`` a symbolic
    link, ``links/hard.md`` a hard link: made before ``a`` drafts, as a user links a
    file), both created and approved at 08:00."""
    home = Home(root)
    (home.work / "a-in.md").write_text("# notes\n\n- the first note\n", encoding="utf-8")
    contract(home.work, "a", {"notes": "a-in.md"}, "a.md")
    path = contract(home.work, "b", {"up": "a.md"}, "b.md")
    text = path.read_text(encoding="utf-8")
    text = text.replace("{from: documents.read, args: {doc: 'file:a.md'}}", "")
    text = text.replace("up: ", f"up: {{from: files.read, args: {{path: '{spelled}'}}}}")
    text = text.replace("requires: [documents:read,", "requires: [files:read, documents:read,")
    path.write_text(text, encoding="utf-8")
    (home.work / "links").mkdir()
    (home.work / "links" / "soft.md").symlink_to(home.work / "a.md")
    (home.work / "links" / "hard.md").hardlink_to(home.work / "a.md")
    for name in "ab":
        home.ok("2026-11-02T08:00:00Z", "heinzel", "new", "--from", f"{name}.prose.md")
        home.ok("2026-11-02T08:00:00Z", "approve", name)
    return home


class Home:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.work = root / "work"
        self.work.mkdir(parents=True, exist_ok=True)
        self.cwd = self.work
        """The folder ``hz`` runs in (the contracts' folder unless a test moves it)."""

    def hz(self, now: str, *args: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HZ_")}
        env.update(
            HZ_HOME=str(self.root / "home"),
            HZ_NOW=now,
            HZ_MODEL="offline",
            HZ_MODEL_FAST="offline",
            HZ_MODEL_BEST="offline",
            HZ_APPROVER="priya",
            HZ_USER="priya",
            HZ_LOG_LEVEL="error",
            XDG_CONFIG_HOME=str(self.root / "config"),
        )
        return forkhz.run(
            [HZ, *args], env=env, cwd=self.cwd, capture_output=True, text=True, check=False
        )

    def ok(self, now: str, *args: str) -> str:
        done = self.hz(now, *args)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done.stdout

    def tick(self, now: str) -> dict[str, Any]:
        report: dict[str, Any] = json.loads(self.ok(now, "system", "daemon", "tick", "--json"))
        return report

    def ids(self) -> dict[str, str]:
        rows = json.loads(self.ok("2026-11-02T08:00:00Z", "heinzel", "list", "--json"))
        return {str(r["id"]): str(r["name"]) for r in rows}

    def approve_draft(self, doc: str) -> None:
        """What a user does to approve: delete the draft's tag line."""
        path = self.work / doc
        lines = path.read_text(encoding="utf-8").split("\n")
        kept = [line for line in lines if not line.startswith(TAG)]
        assert len(kept) == len(lines) - 1, f"no pending draft in {doc}"
        path.write_text("\n".join(kept), encoding="utf-8")


def woken(report: dict[str, Any], names: dict[str, str]) -> list[tuple[str, list[str]]]:
    """Who a tick woke, in order, with the causes of each wake."""
    return [
        (names[w["id"]], [x["cause"] for x in w.get("wakes", [])] or [w.get("woken_by", "")])
        for w in report["woken"]
    ]
