"""What hz reads from `claude --version` and `--help`, and the command line it builds from it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from heinzel.runners.claude_code import ClaudeCodeRunner
from heinzel.runners.claude_probe import (
    ClaudeCapabilities,
    ProbeCache,
    parse_help_flags,
    parse_version,
)
from heinzel.runners.errors import RunnerError
from heinzel.runners.settings import ClaudeCodeSettings, parse_runner_settings

HELP = (Path(__file__).resolve().parents[2] / "fixtures" / "claude-code" / "help.txt").read_text()
HELP_197, HELP_332 = HELP.split("===== claude --help — @anthropic-ai/claude-code 2.1.332")


def caps(help_text: str, version: tuple[int, int, int] = (2, 1, 197)) -> ClaudeCapabilities:
    return ClaudeCapabilities(
        "/bin/claude", version, parse_help_flags(help_text), "dontAsk" in help_text
    )


def claude_settings(**table: object) -> ClaudeCodeSettings:
    settings = parse_runner_settings("cc", {"kind": "claude-code", **table})
    assert isinstance(settings, ClaudeCodeSettings)
    return settings


def fake_claude(tmp_path: Path, version: str, help_text: str = "") -> Path:
    """A `claude` printing a chosen version and help, to probe without the real one."""
    (tmp_path / "help.txt").write_text(help_text)
    script = tmp_path / "claude"
    script.write_text(
        f"#!{sys.executable}\nimport sys\n"
        f"print({version!r}) if sys.argv[1] == '--version' else "
        f"sys.stdout.write(open({str(tmp_path / 'help.txt')!r}).read())\n"
    )
    script.chmod(0o755)
    return script


class TestParseHelp:
    def test_the_two_recorded_versions_differ_in_restricted(self) -> None:
        """2.1.197 lacks --restricted, 2.1.332 lists it; both have the others."""
        old, new = caps(HELP_197), caps(HELP_332, (2, 1, 332))
        assert old.isolation() == {
            "--restricted": False,
            "--safe-mode": True,
            "--setting-sources": True,
            "--disable-slash-commands": True,
            "--strict-mcp-config": True,
            "--no-session-persistence": True,
        }
        assert all(new.isolation().values())
        assert old.problems() == [] and new.problems() == []

    def test_continuation_lines_are_not_options(self) -> None:
        """'--append-system-prompt[-file], --add-dir' inside a description is not a flag."""
        flags = parse_help_flags(HELP_197)
        assert "--append-system-prompt-file" not in flags and "--allowed-tools" in flags

    def test_parse_version(self) -> None:
        """The first x.y.z in `claude --version`."""
        assert parse_version("2.1.197 (Claude Code)\n") == (2, 1, 197)
        assert parse_version("Claude Code") is None

    def test_unenforced_lists_missing_isolation_and_limits(self) -> None:
        """What a build lacks is reported, not silently dropped."""
        assert caps(HELP_197).unenforced(budget=1.0, max_turns=3) == (
            "--restricted (not offered by Claude Code 2.1.197)",
        )
        bare = caps("  --print\n  --output-format\n")
        assert "budget (--max-budget-usd not offered)" in bare.unenforced(
            budget=1.0, max_turns=None
        )
        assert "--permission-mode does not offer dontAsk" in bare.problems()


class TestArgv:
    def test_the_command_line_pins_tools_with_equals_forms(self) -> None:
        """Variadic flags take `=` values, nothing positional follows, the contract is a file."""
        tools = ["Read", "Grep", "WebSearch"]
        runner = ClaudeCodeRunner(
            "cc", claude_settings(model="claude-sonnet-4-5", max_turns=4, tools=tools)
        )
        argv = runner.argv(caps(HELP_197), contract_file=Path("/p/c.md"), tools=tools, budget=0.25)
        assert argv == [
            "/bin/claude",
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--append-system-prompt-file=/p/c.md",
            "--safe-mode",
            "--setting-sources=",
            "--disable-slash-commands",
            "--strict-mcp-config",
            "--no-session-persistence",
            "--tools=Read,Grep,WebSearch",
            "--allowedTools=WebSearch",
            "--permission-mode",
            "dontAsk",
            "--max-budget-usd=0.25",
            "--max-turns=4",
            "--model=claude-sonnet-4-5",
        ]

    def test_restricted_is_used_where_the_build_has_it(self) -> None:
        """2.1.332 gets --restricted."""
        argv = ClaudeCodeRunner("cc", claude_settings()).argv(
            caps(HELP_332, (2, 1, 332)), contract_file=Path("/c"), tools=["Read"], budget=None
        )
        assert "--restricted" in argv and not any(a.startswith("--max-budget-usd") for a in argv)

    def test_file_readers_are_never_pre_approved(self) -> None:
        """Read, Grep and Glob stay unapproved, so dontAsk confines them to the working dir."""
        argv = ClaudeCodeRunner("cc", claude_settings()).argv(
            caps(HELP_197), contract_file=Path("/c"), tools=["Read", "Grep", "Glob"], budget=None
        )
        assert "--tools=Read,Grep,Glob" in argv
        assert not any(a.startswith(("--allowedTools", "--allowed-tools")) for a in argv)

    def test_no_tools_means_an_empty_tools_flag(self) -> None:
        """An empty profile disables every tool (--tools=) and allows none."""
        argv = ClaudeCodeRunner("cc", claude_settings(tools=[])).argv(
            caps(HELP_197), contract_file=Path("/c"), tools=[], budget=None
        )
        assert "--tools=" in argv and not any(a.startswith("--allowedTools") for a in argv)

    def test_extras_that_could_widen_the_run_are_HZR022(self) -> None:
        """Only a short allowlist of extra flags passes; permission and tool flags don't."""
        ClaudeCodeRunner("cc", claude_settings(extra=["--effort=high"]))
        for bad in ("--dangerously-skip-permissions", "--add-dir=/", "--tools=Bash", "positional"):
            with pytest.raises(RunnerError) as caught:
                ClaudeCodeRunner("cc", claude_settings(extra=[bad]))
            assert caught.value.code == "HZR022"

    def test_a_profile_naming_a_writing_tool_is_HZR023(self) -> None:
        """Bash, Edit, Write and friends (patterns too) can't be in a read-only profile."""
        for tool in ("Bash", "Bash(git log *)", "Write", "NotebookEdit"):
            with pytest.raises(RunnerError) as caught:
                ClaudeCodeRunner("cc", claude_settings(tools=["Read", tool]))
            assert caught.value.code == "HZR023"


class TestProbe:
    def test_an_old_version_is_HZR020(self, tmp_path: Path) -> None:
        """Below 2.1.197 the hidden flags hz needs are unverified: refused."""
        claude = fake_claude(tmp_path, "2.0.5 (Claude Code)")
        with pytest.raises(RunnerError) as caught:
            ProbeCache().probe(str(claude), {"PATH": "/usr/bin:/bin"})
        assert caught.value.code == "HZR020" and "older than 2.1.197" in caught.value.message

    def test_no_version_is_HZR020(self, tmp_path: Path) -> None:
        """A program that is not Claude Code is refused."""
        claude = fake_claude(tmp_path, "hello")
        with pytest.raises(RunnerError) as caught:
            ProbeCache().probe(str(claude), {})
        assert caught.value.code == "HZR020"

    def test_a_build_without_the_needed_flags_is_HZR021(self, tmp_path: Path) -> None:
        """Without --tools and dontAsk hz can't keep it read-only: the run is refused."""
        fake_claude(tmp_path, "2.1.200 (Claude Code)", "  -p, --print\n")
        runner = ClaudeCodeRunner(
            "cc",
            claude_settings(executable=str(tmp_path / "claude")),
            environ={"PATH": "/usr/bin:/bin"},
        )
        with pytest.raises(RunnerError) as caught:
            runner.run("hi", contract="c", tools=[], timeout=10, budget=None)
        assert caught.value.code == "HZR021" and "--tools is missing" in caught.value.message

    def test_capabilities_are_cached_per_executable_and_version(self, tmp_path: Path) -> None:
        """A second probe of the same file does not run it again."""
        claude = fake_claude(tmp_path, "2.1.200 (Claude Code)", HELP_197)
        cache = ProbeCache()
        first = cache.probe(str(claude), {})
        (tmp_path / "help.txt").write_text("")  # the help would now differ if asked again
        assert cache.probe(str(claude), {}) is first
