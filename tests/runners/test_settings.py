"""Runner settings: the [runners.<name>] tables parsed, and every mistake a coded error."""

from __future__ import annotations

import pytest

from heinzel.runners.errors import RunnerError
from heinzel.runners.settings import (
    CLAUDE_READ_ONLY_TOOLS,
    ClaudeCodeSettings,
    CommandSettings,
    parse_runner_settings,
    parse_runners_table,
)


class TestParse:
    def test_claude_code_defaults(self) -> None:
        """A bare claude-code table runs `claude` with the read-only default profile."""
        settings = parse_runner_settings("cc", {"kind": "claude-code"})
        assert isinstance(settings, ClaudeCodeSettings)
        assert settings.program() == "claude" and settings.tools == CLAUDE_READ_ONLY_TOOLS

    def test_command_defaults_fail_closed(self) -> None:
        """A command table does not claim read-only unless the user says so."""
        settings = parse_runner_settings("x", {"kind": "command", "command": ["agent", "-q"]})
        assert isinstance(settings, CommandSettings)
        assert settings.command_enforces_read_only is False
        assert (settings.output, settings.output_format, settings.program()) == (
            "stdout",
            "text",
            "agent",
        )

    def test_executable_overrides_the_program_of_a_command(self) -> None:
        """executable names the program while command keeps its documented shape."""
        table = {"kind": "command", "command": ["pi", "--mode", "json"], "executable": "/opt/pi"}
        settings = parse_runner_settings("pi", table)
        assert isinstance(settings, CommandSettings) and settings.program() == "/opt/pi"

    def test_a_runners_table_by_name(self) -> None:
        """[runners] with two tables gives both, by name."""
        parsed = parse_runners_table({"cc": {"kind": "claude-code"}, "pi": {"kind": "command"}})
        assert sorted(parsed) == ["cc", "pi"]

    @pytest.mark.parametrize(
        ("table", "fragment"),
        [
            ({"kind": "codex"}, "kind"),
            ({}, "kind"),
            ({"kind": "claude-code", "max_turns": 0}, "max_turns"),
            ({"kind": "claude-code", "command": ["x"]}, "command"),
            ({"kind": "command", "output": "socket"}, "output"),
            ({"kind": "command", "output_format": "yaml"}, "output_format"),
        ],
    )
    def test_a_wrong_table_is_HZR001_naming_the_key(
        self, table: dict[str, object], fragment: str
    ) -> None:
        """Unknown kinds, unknown keys and bad values are one coded error naming the key."""
        with pytest.raises(RunnerError) as caught:
            parse_runner_settings("mine", table)
        assert caught.value.code == "HZR001"
        assert "[runners.mine]" in caught.value.message and fragment in caught.value.message

    def test_a_runner_that_is_not_a_table_is_HZR001(self) -> None:
        """runners.x = "claude" is refused with a hint."""
        with pytest.raises(RunnerError) as caught:
            parse_runners_table({"x": "claude"})
        assert caught.value.code == "HZR001"
