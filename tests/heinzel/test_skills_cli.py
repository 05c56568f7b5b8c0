"""A newcomer's skill files, through `hz heinzel wake`: a malformed SKILL.md or a skill
found nowhere is refused with its code, and the hint says what to write for a skill (not
for a contract)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from tests import forkhz

ROOT = Path(__file__).resolve().parents[2]
HZ = str(Path(sys.executable).with_name("hz"))


def _run(root: Path, *args: str) -> tuple[int, str, str]:
    env = {
        **os.environ,
        "HOME": str(root),
        "XDG_CONFIG_HOME": str(root / "xdg"),
        "HZ_HOME": str(root / "home"),
        "HZ_FIXTURE_SOURCES": str(root),
        "HZ_NOW": "2026-10-30T14:05:00Z",
    }
    env.pop("HZ_CONFIG", None)
    done = forkhz.run([HZ, *args], env=env, cwd=root, capture_output=True, text=True, check=False)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout, done.stderr


def _hz(root: Path, *args: str) -> tuple[int, list[str]]:
    status, _out, err = _run(root, *args)
    return status, err.splitlines()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """Priya's folder as a project (hz.toml beside it, so skills/ is a skill directory),
    with a contract that uses house-style, created and approved."""
    root = tmp_path / "priya"
    shutil.copytree(ROOT / "fixtures" / "priya", root)
    (root / "hz.toml").write_text("", encoding="utf-8")
    contract = root / "weekly-report.prose.md"
    text = contract.read_text(encoding="utf-8")
    contract.write_text(text.replace("  timeout: 10m\n", "  timeout: 10m\n  uses: [house-style]\n"))
    assert _hz(root, "heinzel", "new", "--from", "weekly-report.prose.md")[0] == 0
    assert _hz(root, "approve", "weekly-report")[0] == 0
    return root


def _skill(root: Path, text: str) -> None:
    folder = root / "skills" / "house-style"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(text, encoding="utf-8")


@pytest.mark.parametrize(
    ("text", "code", "hint"),
    [
        ("Short sentences.\n", "HZC001", "start SKILL.md with a line '---', then name:"),
        ("---\nname: house_style\ndescription: x\n---\n", "HZC053", "name: house-style"),
        ("---\nname: house-style\n---\nShort.\n", "HZC053", "add description:"),
    ],
)
def test_a_malformed_skill_is_hinted_as_a_skill(
    root: Path, text: str, code: str, hint: str
) -> None:
    """The wake is refused (exit 1) with the skill's file and line, and a skill's hint."""
    _skill(root, text)
    status, err = _hz(root, "heinzel", "wake", "weekly-report")
    assert status == 1
    assert err[0].startswith(f"{code}: {root / 'skills' / 'house-style' / 'SKILL.md'}:")
    assert err[1].startswith(f"hint: {hint}")


def test_a_skill_found_nowhere_says_where_to_put_it(root: Path) -> None:
    """HZC052 lists the directories searched, where the file goes, and the other way out."""
    status, err = _hz(root, "heinzel", "wake", "weekly-report")
    assert status == 1 and err[0].startswith("HZC052:")
    assert str(root / "skills") in err[1]
    assert err[1].endswith(
        "put it in house-style/SKILL.md in one of them (docs/configuration.md, 'Skill "
        "directories'), or remove house-style from the contract's hz.uses"
    )
    _skill(root, "---\nname: house-style\ndescription: How Acme writes.\n---\nShort.\n")
    assert _hz(root, "heinzel", "wake", "weekly-report")[0] == 0


def test_new_and_approve_warn_of_a_skill_found_nowhere(root: Path) -> None:
    """A contract whose uses names a missing skill is created and approved (exit 0), each
    with an HZC052 warning: its turns would stop on it, so it is said before the first."""
    warning = (
        "warning: HZC052: weekly-report uses the skill 'house-style', which is in no skill "
        "directory, so its turns will stop on it; put house-style/SKILL.md in one of: "
    )
    args = ("heinzel", "new", "--from", "weekly-report.prose.md", "--name", "second")
    for done in (_run(root, *args), _run(root, "approve", "second")):
        assert done[0] == 0
        assert warning in done[1] + done[2]
    _skill(root, "---\nname: house-style\ndescription: How Acme writes.\n---\nShort.\n")
    quiet = _run(root, "heinzel", "new", "--from", "weekly-report.prose.md", "--name", "third")
    assert quiet[0] == 0 and "HZC052" not in quiet[1] + quiet[2]
