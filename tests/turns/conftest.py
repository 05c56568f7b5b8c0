"""Fixtures for the turn host: a home with an approved Heinzelmännchen over real files."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pydantic_ai.models
import pytest

from heinzel.config import HeinzelSettings, Settings
from heinzel.service import Service
from heinzel.store.home import Home

pydantic_ai.models.ALLOW_MODEL_REQUESTS = False

CONTRACT = """---
name: notes-digest
kind: responsibility
hz:
  namespace: me
  render_on_schedule: {render}
  requires: [files:read, documents:write]
  inputs:
    notes: {{from: files.read, args: {{path: notes.txt}}}}
  outputs:
    section: {{asset: "file:report.md"}}
  publishes: [documents.place_draft]
  agent: {{max_usd: 0.5}}
---

### Goal

A short digest of the notes at the end of the report.

### Maintains

- `section`: the digest

### Done when

- [ ] {done_when}
"""

NOW = datetime(2026, 10, 30, 14, 0, tzinfo=UTC)


def hz_env(service: Service, now: str = "2026-10-30T14:00:00Z") -> dict[str, str]:
    """The environment of an `hz` command these tests run: this one's, the service's home
    and the clock at ``now``."""
    return {**os.environ, "HZ_HOME": str(service.home.root), "HZ_NOW": now}


@pytest.fixture
def make_service(tmp_path: Path) -> Callable[..., tuple[Service, str, Path]]:
    """A service with one approved Heinzelmännchen; returns (service, id, folder)."""

    made = [0]

    def build(
        notes: str = "ship the rounding fix\nwrite the release notes\n",
        render: str = "always",
        done_when: str = "every item of `notes` is covered",
    ) -> tuple[Service, str, Path]:
        made[0] += 1
        root = tmp_path / f"r{made[0]}"
        folder = root / "work"
        folder.mkdir(parents=True)
        (folder / "notes.txt").write_text(notes, encoding="utf-8")
        (folder / "report.md").write_text("# Report\n\n## Earlier\n\n- done\n", encoding="utf-8")
        (folder / "digest.prose.md").write_text(
            CONTRACT.format(render=render, done_when=done_when), encoding="utf-8"
        )
        settings = Settings(heinzel=HeinzelSettings(home=root / "home"))
        service = Service(Home(root / "home"), lambda: NOW, settings, owner="me")
        row = service.create_from_files([str(folder / "digest.prose.md")])[0]
        service.approve(row["id"])
        return service, row["id"], folder

    return build
