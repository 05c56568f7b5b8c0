"""The crash matrix over a real `hz heinzel wake`: killed at every durable append, resumed."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from heinzel.config import HeinzelSettings, Settings
from heinzel.service import Service
from heinzel.store.home import Home
from ledger.spine import read_events
from tests import forkhz

from .conftest import NOW


def _wake(home: Path, crash_at: str | None, tmp: Path) -> int:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp),
        "XDG_CONFIG_HOME": str(tmp / "config"),
        "HZ_NOW": "2026-10-30T14:00:00.000Z",
        "HZ_USER": "me",
    }
    if crash_at:
        env["HZ_CRASH_AT"] = crash_at
    command = [sys.executable, "-m", "heinzel", "heinzel", "wake", "notes-digest"]
    done = forkhz.run(
        [*command, "--home", str(home), "--message", "now"],
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
    )
    return done.returncode


def _resume(service: Service, heinzel_id: str) -> None:
    """Resume the killed turn in a whole new process (`resume_turn.py`), as the tick would."""
    script = Path(__file__).parent / "resume_turn.py"
    recovery = forkhz.run(
        [sys.executable, str(script), str(service.home.root), heinzel_id],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert recovery.returncode == 0, recovery.stderr[-2000:]


def _fresh(home: Path) -> Service:
    settings = Settings(heinzel=HeinzelSettings(home=home))
    return Service(Home(home), lambda: NOW, settings, owner="me")


def _turn_lines(service: Service, heinzel_id: str) -> list[Any]:
    return [e for e in read_events(service.home.spine_path(heinzel_id)) if e.turn]


@pytest.mark.kill
class TestCrashMatrix:
    """Every durable boundary of a drafted wake: killed there, resumed, one section."""

    def test_every_boundary(
        self, make_service: Callable[..., Any], tmp_path_factory: pytest.TempPathFactory
    ) -> None:
        """Killed after append n, recovery ends drafted: one section, no request made twice."""
        base = tmp_path_factory.mktemp("clean")
        service, heinzel_id, folder = _setup(make_service)
        assert _wake(service.home.root, None, base) == 0
        clean = _turn_lines(_fresh(service.home.root), heinzel_id)
        assert clean[-1].kind == "turn.finished"
        clean_usd = clean[-1].data["usd"]
        clean_requests = sum(e.kind == "model.request" for e in clean)
        failures = []
        for n in range(1, len(clean)):
            service, heinzel_id, folder = _setup(make_service)
            code = _wake(service.home.root, f"append:{n}", base)
            assert code == 137, f"append:{n} exited {code}"
            _resume(service, heinzel_id)
            resumed = _fresh(service.home.root)
            lines = _turn_lines(resumed, heinzel_id)
            text = (folder / "report.md").read_text(encoding="utf-8")
            end = lines[-1]
            if (
                text.count("<!-- hz:draft key=") != 1
                or end.kind != "turn.finished"
                or end.data.get("disposition") != "drafted"
                or end.data.get("usd") != clean_usd
                or sum(e.kind == "model.request" for e in lines) != clean_requests
                or not resumed.verify(heinzel_id)[0]["ok"]
            ):
                failures.append((n, end.kind, end.data))
        assert failures == []


def _setup(make_service: Callable[..., Any]) -> tuple[Service, str, Path]:
    service, heinzel_id, folder = make_service()
    return service, heinzel_id, folder
