"""hz installed as a tool (the way `uv tool install` or `pipx install` puts a wheel into a
virtual environment of its own) works outside the clone: `hz --help` and `hz demo`, whose
fixtures the package carries. The wheel is built from this checkout with the lock's
setuptools (no network), installed beside the lock's exact dependencies in a fresh
environment under the test's temporary folder, and run from a folder that is not the clone."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
UV = shutil.which("uv", path=str(BIN))

pytestmark = pytest.mark.slow


def run(argv: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("HZ_", "PYTHON"))}
    return subprocess.run(
        argv, cwd=cwd, env={**clean, **env}, capture_output=True, text=True, check=False
    )


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``bin`` folder of a fresh environment holding the wheel and the lock."""
    if UV is None:
        pytest.skip("uv is not in the test environment (make test installs it from the lock)")
    base = tmp_path_factory.mktemp("tool")
    wheels = base / "wheels"
    built = run(
        [
            str(BIN / "pip"),
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(wheels),
            str(ROOT),
        ],
        cwd=base,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = wheels.glob("heinzel-*.whl")
    venv = base / "venv"
    made = run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=base)
    assert made.returncode == 0, made.stderr
    python = str(venv / "bin" / "python")
    for requirement in (
        ["--require-hashes", "-r", str(ROOT / "requirements.lock")],
        [str(wheel)],
    ):
        done = run(
            [UV, "pip", "install", "-q", "--python", python, "--no-deps", *requirement], cwd=base
        )
        assert done.returncode == 0, done.stderr
    return venv / "bin"


def test_the_installed_package_is_not_the_clone(installed: Path, tmp_path: Path) -> None:
    where = run(
        [str(installed / "python"), "-c", "import heinzel; print(heinzel.__file__)"], cwd=tmp_path
    )
    assert where.returncode == 0, where.stderr
    assert not Path(where.stdout.strip()).resolve().is_relative_to(ROOT)


def test_hz_help_runs_installed(installed: Path, tmp_path: Path) -> None:
    done = run([str(installed / "hz"), "--help"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "heinzel" in done.stdout


def test_hz_demo_runs_installed_from_any_folder(installed: Path, tmp_path: Path) -> None:
    home = tmp_path / "demo-home"
    done = run([str(installed / "hz"), "demo", "--home", str(home)], cwd=tmp_path)
    assert done.returncode == 0, done.stderr + done.stdout[-2000:]
    assert "HZH240" not in done.stdout + done.stderr
    assert (home / "priya" / "weekly-report.md").is_file()
    assert "Traceback" not in done.stderr
