"""`hz system doctor` on a newcomer's `[runners.*]` tables: each problem's fix is what to do
(not the problem again), a refused Claude Code table still shows the build it found, a
misspelt key is named with the key it meant, and two tables say that none is bound."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests import forkhz

ROOT = Path(__file__).resolve().parents[2]
HELP = (ROOT / "fixtures" / "claude-code" / "help.txt").read_text(encoding="utf-8")
HELP_197 = HELP.split("===== claude --help — @anthropic-ai/claude-code 2.1.332")[0]


def _doctor(tmp_path: Path, config: str) -> tuple[int, dict[str, dict[str, Any]]]:
    """Exit status and the runner checks of `hz system doctor --json`, by name."""
    (tmp_path / "config.toml").write_text(config, encoding="utf-8")
    bin_dir = tmp_path / "bin"
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "HZ_HOME": str(tmp_path / "home"),
        "HZ_CONFIG": str(tmp_path / "config.toml"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
    }
    done = forkhz.hz(["system", "doctor", "--json"], env, tmp_path)
    checks = json.loads(done.stdout)["checks"]
    wanted = ("runner", "project")
    return done.returncode, {c["name"]: c for c in checks if c["name"].startswith(wanted)}


def _fake_claude(tmp_path: Path) -> Path:
    """A `claude` on PATH printing 2.1.197's version and help."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (tmp_path / "help.txt").write_text(HELP_197, encoding="utf-8")
    script = bin_dir / "claude"
    script.write_text(
        f"#!{sys.executable}\nimport sys\n"
        "print('2.1.197 (Claude Code)') if sys.argv[1] == '--version' else "
        f"sys.stdout.write(open({str(tmp_path / 'help.txt')!r}).read())\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    return script


def test_a_missing_executable_is_fixed_by_its_hint_not_repeated(tmp_path: Path) -> None:
    """HZR002's fix line says how to fix it; it does not print the problem a second time."""
    status, checks = _doctor(
        tmp_path,
        '[runners.helper]\nkind = "command"\ncommand = ["no-such-agent", "{prompt_file}"]\n'
        "command_enforces_read_only = true\n",
    )
    check = checks["runner helper"]
    assert status == 1 and check["ok"] is False
    assert "HZR002" in check["detail"]
    assert check["fix"] == "install it, or set [runners.helper] executable to its absolute path"


def test_a_command_without_the_read_only_statement_is_told_how_to_state_it(
    tmp_path: Path,
) -> None:
    """The refusal's fix is the line to add, not 'see docs/runners.md'."""
    _status, checks = _doctor(
        tmp_path, f'[runners.helper]\nkind = "command"\ncommand = ["{sys.executable}", "-V"]\n'
    )
    assert checks["runner helper"]["fix"].startswith(
        "set [runners.helper] command_enforces_read_only = true"
    )


def test_a_refused_claude_table_still_shows_the_build_it_found(tmp_path: Path) -> None:
    """A Bash tool is refused (HZR023) while the claude on PATH and its version are shown,
    not 'no executable' and every isolation flag missing."""
    claude = _fake_claude(tmp_path)
    status, checks = _doctor(
        tmp_path, '[runners.cc]\nkind = "claude-code"\ntools = ["Read", "Bash"]\n'
    )
    check = checks["runner cc"]
    assert status == 1 and check["ok"] is False
    assert check["detail"].startswith(
        f"claude-code; {claude}; version 2.1.197; lacks --restricted;"
    )
    assert "HZR023" in check["detail"]
    assert check["fix"].startswith("a handoff is read-only")


def test_a_misspelt_key_names_the_key_it_meant(tmp_path: Path) -> None:
    """HZR001 names the unknown key in the table's own words, and the hint the close one."""
    _status, checks = _doctor(
        tmp_path,
        '[runners.pi]\nkind = "command"\ncommand = ["pi"]\ncomand_enforces_read_only = true\n',
    )
    check = checks["runner pi"]
    assert check["detail"] == (
        "HZR001: [runners.pi] is not a valid runner table: unknown key comand_enforces_read_only"
    )
    assert check["fix"].startswith("did you mean 'command_enforces_read_only'?")


def test_two_tables_say_that_none_is_bound(tmp_path: Path) -> None:
    """A turn binds the one table there is; with two, doctor says no handoff is bound."""
    table = f'kind = "command"\ncommand = ["{sys.executable}", "-V"]\n'
    table += "command_enforces_read_only = true\n"
    status, checks = _doctor(tmp_path, f"[runners.a]\n{table}\n[runners.b]\n{table}")
    assert checks["runner a"]["ok"] and checks["runner b"]["ok"]
    assert status == 1 and checks["runners"]["ok"] is False
    assert checks["runners"]["detail"].startswith("2 tables (a, b): none is bound")


def test_no_table_is_fine(tmp_path: Path) -> None:
    """No runner: one ok line, and turns have no handoff tool."""
    _status, checks = _doctor(tmp_path, "")
    assert checks["runners"] == {
        "name": "runners",
        "ok": True,
        "detail": "none bound (turns have no handoff tool)",
    }


def test_a_runner_in_a_projects_hz_toml_is_said_to_be_ignored(tmp_path: Path) -> None:
    """What runs never comes from a project file: its [runners.x] binds nothing, and doctor
    says so, naming the file and where the table goes instead."""
    (tmp_path / "hz.toml").write_text(
        f'[runners.x]\nkind = "command"\ncommand = ["{sys.executable}", "-V"]\n'
        "command_enforces_read_only = true\n",
        encoding="utf-8",
    )
    status, checks = _doctor(tmp_path, "")
    assert status == 1 and "runner x" not in checks
    project = checks["project configuration"]
    assert project["ok"] is False
    assert project["detail"] == (
        f"{tmp_path / 'hz.toml'} sets runners.x, which a project's hz.toml may not set: ignored"
    )
    assert project["fix"].startswith("set them in your own configuration (")
