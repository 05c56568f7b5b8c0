"""`hz heinzel report NAME`: the action log read from the spine and the turn bodies."""

from __future__ import annotations

import json
from pathlib import Path

from tests.loop.conftest import Hz


def test_report_shows_reads_writes_entries_and_decisions(approved: Hz, tmp_path: Path) -> None:
    """Each turn lists its inputs with fingerprints, its draft, its report entries and its
    disposition; after the bodies are gone the body's parts say expired, the spine's stay."""
    assert approved("heinzel", "wake", "notes-digest", "--message", "again").code == 0
    done = approved("heinzel", "report", "notes-digest", "--json")
    assert done.code == 0, done.err
    log = json.loads(done.out)
    (turn,) = log["turns"]
    assert turn["read"][0]["name"] == "notes"
    assert len(turn["read"][0]["fingerprint"]) == 64
    assert turn["wrote"][0]["what"] == "draft"
    assert turn["wrote"][0]["asset"].endswith("report.md")
    assert turn["entries"][0]["verb"] == "read"
    assert turn["decided"]["disposition"] == "drafted"
    spine = (tmp_path / "home" / "heinzel" / log["id"] / "session.jsonl").read_text()
    assert "read 2 inputs" not in spine, "the entries' text stays in the body"
    text = approved("heinzel", "report", "notes-digest")
    assert "decided: drafted" in text.out and "log: read notes-digest" in text.out
    for body in (tmp_path / "home" / "heinzel" / log["id"] / "turns").iterdir():
        body.unlink()
    after = json.loads(approved("heinzel", "report", "notes-digest", "--json").out)
    (gone,) = after["turns"]
    assert gone["read"] == "expired" and gone["entries"] == "expired"
    assert gone["wrote"] == turn["wrote"] and gone["decided"] == turn["decided"]


def test_report_of_an_unknown_name_is_coded(approved: Hz) -> None:
    """A name nobody has is an error with a code, exit 1."""
    done = approved("heinzel", "report", "nobody")
    assert done.code == 1 and done.err.startswith("HZH080")
