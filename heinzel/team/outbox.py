"""The outbox: receipts written under the home before anything pushes them.

``<home>/team/outbox/<seq>.json``, one receipt a file, written atomically and durably
and named in order; ``cursor.json`` says up to which spine seq each team Heinzelmännchen's
events are in the outbox. A crash between the two writes puts a receipt in twice; the
push drops a receipt whose id the branch already holds, so each leaves once, in order.
A receipt the lint or the fencing rule refuses moves to ``refused/`` and is reported.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ledger.files import ensure_private_dir, write_atomic

__all__ = ["Outbox"]


class Outbox:
    """The home's team outbox and cursor."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.dir = root / "outbox"
        self.refused_dir = root / "refused"
        self.cursor_path = root / "cursor.json"

    def cursor(self) -> dict[str, int]:
        try:
            data = json.loads(self.cursor_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return {str(k): int(v) for k, v in data.items()} if isinstance(data, dict) else {}

    def advance(self, cursor: Mapping[str, int]) -> None:
        ensure_private_dir(self.root)
        write_atomic(self.cursor_path, json.dumps(dict(cursor), sort_keys=True).encode())

    def put(self, records: list[dict[str, Any]]) -> None:
        """Append ``records`` in order (each durable before the cursor moves)."""
        if not records:
            return
        ensure_private_dir(self.dir)
        last = max((int(p.stem) for p in self.dir.glob("*.json")), default=0)
        for offset, record in enumerate(records, start=1):
            line = json.dumps(record, sort_keys=True, separators=(",", ":"))
            write_atomic(self.dir / f"{last + offset:012d}.json", line.encode())

    def pending(self) -> list[tuple[Path, dict[str, Any]]]:
        """What waits, oldest first."""
        found = []
        for path in sorted(self.dir.glob("*.json")) if self.dir.is_dir() else []:
            try:
                found.append((path, json.loads(path.read_text(encoding="utf-8"))))
            except (OSError, ValueError):
                self.refuse(path, "not a readable receipt")
        return found

    def refuse(self, path: Path, reason: str) -> None:
        """Move a receipt out of the outbox into ``refused/``, beside its reason
        (``<name>.reason``). Every refused receipt is kept: the outbox's numbers start
        again once it is empty, so a name already taken there gets a suffix."""
        ensure_private_dir(self.refused_dir)
        kept = self.refused_dir / path.name
        for number in range(1, 100_000):
            if not kept.exists():
                break
            kept = self.refused_dir / f"{path.stem}-{number}{path.suffix}"
        write_atomic(kept.with_suffix(".reason"), reason.encode())
        path.replace(kept)

    def refused(self) -> int:
        return len(list(self.refused_dir.glob("*.json"))) if self.refused_dir.is_dir() else 0

    def refusals(self) -> list[dict[str, Any]]:
        """Each refused receipt's file name, reason and record (None when unreadable),
        oldest name first."""
        if not self.refused_dir.is_dir():
            return []
        found = []
        for path in sorted(self.refused_dir.glob("*.json")):
            try:
                reason = path.with_suffix(".reason").read_text(encoding="utf-8")
            except OSError:
                reason = "(no reason kept)"
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                record = None
            found.append({"file": path.name, "reason": reason, "record": record})
        return found

    def unrefuse(self, name: str) -> None:
        """Put the refused receipt ``name`` back at the end of the outbox."""
        path = self.refused_dir / name
        self.put([json.loads(path.read_text(encoding="utf-8"))])
        path.with_suffix(".reason").unlink(missing_ok=True)
        path.unlink()

    def again(self) -> frozenset[str]:
        """Ids of receipts to push again after a rewrite of ``hz/state`` dropped them."""
        try:
            data = json.loads((self.root / "again.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return frozenset()
        return frozenset(str(i) for i in data) if isinstance(data, list) else frozenset()

    def set_again(self, ids: frozenset[str]) -> None:
        ensure_private_dir(self.root)
        write_atomic(self.root / "again.json", json.dumps(sorted(ids)).encode())
