"""check_runner: what `hz system doctor` will say about each bound runner."""

from __future__ import annotations

import sys
from pathlib import Path

from heinzel.runners.doctor import check_runner
from heinzel.runners.settings import parse_runner_settings


class TestClaudeCode:
    def test_the_real_binary(self, claude_executable: str, tmp_path: Path) -> None:
        """On PATH, its version, its isolation flags and what 2.1.197 can't enforce."""
        settings = parse_runner_settings("claude", {"kind": "claude-code"})
        bin_dir = Path(claude_executable).parent
        check = check_runner(
            "claude", settings, environ={"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path)}
        )
        assert check.ok and check.on_path and check.version == "2.1.197"
        assert check.isolation["--restricted"] is False and check.isolation["--safe-mode"] is True
        assert check.unenforced_limits == ("--restricted (not offered by Claude Code 2.1.197)",)
        assert (check.refuses, check.problems) == (False, ())

    def test_not_installed(self, tmp_path: Path) -> None:
        """Not on PATH: not ok, with the coded reason."""
        settings = parse_runner_settings("claude", {"kind": "claude-code"})
        check = check_runner("claude", settings, environ={"PATH": str(tmp_path)})
        assert not check.ok and not check.on_path and check.version is None
        assert check.problems[0].startswith("HZR002:")


class TestCommand:
    def test_a_command_that_has_not_stated_read_only_refuses(self) -> None:
        """Fail closed: doctor says it refuses and why, and runs nothing to ask a version."""
        settings = parse_runner_settings(
            "pi", {"kind": "command", "command": [sys.executable, "-V"]}
        )
        check = check_runner("pi", settings)
        assert check.refuses and not check.ok and check.on_path and check.version is None
        assert "command_enforces_read_only is not true" in (check.refusal or "")

    def test_a_ready_command(self) -> None:
        """Stated read-only and present: ok, its version, and what it can't enforce."""
        table = {
            "kind": "command",
            "command": [sys.executable, "{prompt_file}"],
            "command_enforces_read_only": True,
        }
        check = check_runner("py", parse_runner_settings("py", table))
        assert check.ok and not check.refuses and (check.version or "").startswith("Python 3")
        assert [limit.split(" ")[0] for limit in check.unenforced_limits] == [
            "read_only",
            "tools",
            "budget",
        ]

    def test_a_broken_command(self, tmp_path: Path) -> None:
        """A missing program and a bad placeholder are both listed as problems."""
        table = {
            "kind": "command",
            "command": ["no-such-agent", "{nope}"],
            "command_enforces_read_only": True,
        }
        check = check_runner(
            "x", parse_runner_settings("x", table), environ={"PATH": str(tmp_path)}
        )
        assert check.refuses and not check.on_path
        assert [problem[:6] for problem in check.problems] == ["HZR011", "HZR002"]
