"""Fixtures for the heinzel core: a home, a fixed clock, a service, contract files."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from heinzel.config import load_settings
from heinzel.service import Service
from heinzel.store.home import Home

ROOT = Path(__file__).resolve().parents[2]
GOOD = ROOT / "fixtures" / "contracts" / "good"


class SteppingClock:
    """A clock tests move by hand; never the wall clock."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def step(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture
def clock() -> SteppingClock:
    return SteppingClock(datetime(2026, 10, 26, 9, 0, tzinfo=UTC))


@pytest.fixture
def make_service(tmp_path: Path, clock: SteppingClock) -> Callable[[], Service]:
    def make() -> Service:
        loaded = load_settings(
            env={}, cwd=tmp_path, site=None, user=None, data_dir=tmp_path / "home"
        )
        return Service(Home(tmp_path / "home"), clock, loaded.settings, owner="priya")

    return make


@pytest.fixture
def service(make_service: Callable[[], Service]) -> Service:
    return make_service()


@pytest.fixture
def weekly(tmp_path: Path) -> Path:
    target = tmp_path / "weekly-report.prose.md"
    target.write_text((GOOD / "weekly-report.prose.md").read_text(encoding="utf-8"))
    return target


def variant(path: Path, old: str, new: str, name: str) -> Path:
    """A copy of a contract file with one replacement."""
    text = path.read_text(encoding="utf-8")
    assert old in text
    target = path.with_name(name)
    target.write_text(text.replace(old, new), encoding="utf-8")
    return target
