"""Ana and Ben against a bare team repository (`team_of_two`), made once per worker and put
back as made before each test that takes it (`two`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .test_two_machines import Machine, Two, team_of_two


@pytest.fixture(scope="session")
def team_made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder `team_of_two` made, once per worker (a bare repository, then `heinzel
    new` and `approve` on both machines: four `hz` processes, about a second), kept as made
    beside it (``pristine``)."""
    root = tmp_path_factory.mktemp("team") / "root"
    root.mkdir()
    team_of_two(root)
    shutil.copytree(root, root.parent / "pristine", symlinks=True)
    return root


@pytest.fixture
def two(team_made: Path) -> Two:
    """`team_of_two`'s team, put back as made before each test, in the same folder (not a
    copy elsewhere: the homes' spines and configs name it, as a user's name theirs); what
    a test adds of its own (keys, scratch clones, more machines) goes under its
    ``tmp_path``."""
    shutil.rmtree(team_made)
    shutil.copytree(team_made.parent / "pristine", team_made, symlinks=True)
    remote = team_made / "team.git"
    return (
        remote,
        Machine(team_made, "ana", remote, made=True),
        Machine(team_made, "ben", remote, made=True),
    )
