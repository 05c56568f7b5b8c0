"""Where hz keeps its files: ``HZ_HOME`` and the layout of design.md.

```
heinzel/index.sqlite             derived; rebuildable from the spines
heinzel/sources/                 the tick's source cache
heinzel/<id>/session.jsonl       the spine
heinzel/<id>/lock                one writer per spine
heinzel/<id>/turns/<turn>.jsonl  turn bodies
heinzel/<id>/inbox/<req>.json    chat messages
heinzel/pending/<id>@<req>       empty marks of chats the tick checks until a turn has them
heinzel/<id>/contract/v<n>.prose.md (+ v<n>.json, the compiled form)
web/token, web/turns.log         the web head's login token and its chat turns' errors
team/                            the team repository's mirror, outbox and state
```
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from heinzel.ids import ids_among, is_id
from ledger.records import frozen_record

__all__ = ["Home"]


@frozen_record
class Home:
    """One ``HZ_HOME``: every path hz reads or writes is derived here."""

    root: Path

    @property
    def heinzel_dir(self) -> Path:
        return self.root / "heinzel"

    @property
    def own_dirs(self) -> tuple[Path, ...]:
        """The folders hz keeps in the home: ``heinzel/`` (spines, bodies, the index, the
        inbox, the source cache), ``web/`` (the web head's token and log) and ``team/``
        (the team repository's mirror and outbox). Anything else in the home is the
        user's (``hz demo`` keeps Priya's documents in ``<home>/priya/``)."""
        return (self.heinzel_dir, self.root / "web", self.root / "team")

    @property
    def index_path(self) -> Path:
        return self.heinzel_dir / "index.sqlite"

    @property
    def sources_dir(self) -> Path:
        return self.heinzel_dir / "sources"

    @property
    def tick_lock(self) -> Path:
        return self.heinzel_dir / "tick.lock"

    def session_dir(self, heinzel_id: str) -> Path:
        return self.heinzel_dir / heinzel_id

    def spine_path(self, heinzel_id: str) -> Path:
        return self.session_dir(heinzel_id) / "session.jsonl"

    def turns_dir(self, heinzel_id: str) -> Path:
        return self.session_dir(heinzel_id) / "turns"

    def inbox_dir(self, heinzel_id: str) -> Path:
        return self.session_dir(heinzel_id) / "inbox"

    def contract_dir(self, heinzel_id: str) -> Path:
        return self.session_dir(heinzel_id) / "contract"

    def contract_text_path(self, heinzel_id: str, version: int) -> Path:
        return self.contract_dir(heinzel_id) / f"v{version}.prose.md"

    def contract_json_path(self, heinzel_id: str, version: int) -> Path:
        return self.contract_dir(heinzel_id) / f"v{version}.json"

    def spine_files(self) -> dict[str, str]:
        """Each session directory's spine file, id -> plain path, whether or not the spine
        is there yet: what a read checks the index against (`ledger.index_read`). One
        listing of ``heinzel/`` (names only, no entry object each), in the directory's
        order, and no stat per session: a missing spine is never behind, and one under a
        name that is not a folder is missing (its ``lstat`` or ``access`` fails)."""
        top = str(self.heinzel_dir)
        try:
            names = os.listdir(top)  # plain strings: a home of 10,000 is one listing
        except (FileNotFoundError, NotADirectoryError):
            return {}
        return {name: f"{top}/{name}/session.jsonl" for name in ids_among(names)}

    def session_ids(self) -> Iterator[str]:
        """Every session directory under this home (for reindex and verify)."""
        if not self.heinzel_dir.is_dir():
            return
        top = str(self.heinzel_dir)
        with os.scandir(top) as entries:  # plain strings: a home of 10,000 is one listing
            names = sorted(e.name for e in entries if is_id(e.name))
        for name in names:
            if os.path.isfile(os.path.join(top, name, "session.jsonl")):
                yield name
