"""A home with Priya's week played (`hz demo`), copied per test, and the web head over it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from heinzel.app import App
from heinzel.cli.demo import Week
from heinzel.web.actions import spawn_verb
from heinzel.web.background import spawn_chat_turn
from heinzel.web.server import create_app
from tests import forkhz

TOKEN = "test-token-0123456789"
ORIGIN = "http://testserver"


def demo_env(home: Path) -> dict[str, str]:
    """What the demo's own commands run with (offline model, the copied fixtures)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HZ_")}
    env.update(
        HZ_HOME=str(home),
        HZ_FIXTURE_SOURCES=str(home / "priya"),
        HZ_MODEL="offline",
        HZ_MODEL_FAST="offline",
        HZ_MODEL_BEST="offline",
        HZ_USER="priya",
        HZ_APPROVER="priya",
        HZ_LOG_LEVEL="error",
    )
    return env


@pytest.fixture(scope="session")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Priya's week up to Wednesday (`hz demo`'s moments before Theo's Friday, which adds
    a second Heinzelmännchen), played once per test session, one ``hz`` process per
    command, forked (tests/forkhz.py): set-up, which tests/e2e/test_priya.py proves and
    `hz demo` plays on the real executable (tests/loop/test_person_lies.py)."""
    home = tmp_path_factory.mktemp("week") / "home"
    week = Week(home, run=forkhz.run)
    week.setup()
    week.play(until=6)
    shutil.copytree(home / "priya", home.parent / "pristine")
    return home


@pytest.fixture
def home(played: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of the played week; the working directory is its documents'. The
    drafts' keys name the played home's documents, so those are put back as played first."""
    shutil.rmtree(played / "priya")
    shutil.copytree(played.parent / "pristine", played / "priya")
    copy = tmp_path / "home"
    shutil.copytree(played, copy)
    monkeypatch.chdir(copy / "priya")
    return copy


@pytest.fixture
def children() -> Iterator[list[subprocess.Popen[bytes]]]:
    """The child processes the web head started for chat turns (waited for at the end)."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for child in started:
        child.wait(timeout=120)


def web_app(
    home: Path, children: list[subprocess.Popen[bytes]], env: dict[str, str] | None = None
) -> Starlette:
    """The web head over ``home``; each child process it starts for a turn (a chat's, a
    button's, an answer's) is kept in ``children``."""
    env = env or demo_env(home)

    def start(root: Path, heinzel: str, request_id: str) -> None:
        children.append(spawn_chat_turn(root, heinzel, request_id, env))

    def start_verb(root: Path, heinzel: str, verb: str, hint: str, rid: str | None) -> None:
        children.append(spawn_verb(root, heinzel, verb, hint, env, request_id=rid))

    return create_app(
        lambda: App.from_environment(str(home), env),
        TOKEN,
        hosts=["testserver"],
        idle_seconds=0,
        start_turn=start,
        start_verb=start_verb,
    )


@pytest.fixture
def client(home: Path, children: list[subprocess.Popen[bytes]]) -> Iterator[TestClient]:
    """A client that has exchanged the token for its cookie."""
    with TestClient(web_app(home, children), follow_redirects=False) as test_client:
        answer = test_client.get(f"/auth?token={TOKEN}")
        assert answer.status_code == 303
        yield test_client


def heinzel_id(home: Path, name: str = "weekly-report") -> str:
    """The id of the week's Heinzelmännchen ``name`` (Priya's report by default; Theo's
    ``my-row`` joins it on his Friday)."""
    for session in sorted((home / "heinzel").glob("hz-*/session.jsonl")):
        with session.open(encoding="utf-8") as lines:
            if json.loads(next(lines))["data"].get("name") == name:
                return session.parent.name
    raise LookupError(name)
