"""The generic command adapter against a fake agent CLI run as a real process."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from heinzel.runners.command import CommandRunner
from heinzel.runners.errors import RunnerError
from heinzel.runners.settings import CommandSettings, parse_runner_settings
from tests.waits import HANG

Command = Callable[..., list[str]]


def settings(command: list[str], **table: object) -> CommandSettings:
    values: dict[str, object] = {
        "kind": "command",
        "command": command,
        "command_enforces_read_only": True,
        "tools": ["read", "grep"],
    }
    values.update(table)
    parsed = parse_runner_settings("fake", values)
    assert isinstance(parsed, CommandSettings)
    return parsed


def runner(command: list[str], env: dict[str, str] | None = None, **table: object) -> CommandRunner:
    return CommandRunner("fake", settings(command, **table), environ=env, grace=0.2)


def go(r: CommandRunner, prompt: str = "check the notes", **kw: object):
    args: dict[str, object] = {
        "contract": "be read-only",
        "tools": [],
        "timeout": HANG,
        "budget": 0.5,
    }
    args.update(kw)
    return r.run(prompt, **args)  # type: ignore[arg-type]


class TestConfiguration:
    def test_it_refuses_to_run_until_read_only_is_stated(self, fake_agent: Command) -> None:
        """Fail closed: without command_enforces_read_only = true nothing runs (HZR010)."""
        r = runner(fake_agent("text"), command_enforces_read_only=False)
        assert r.refusal() is not None
        with pytest.raises(RunnerError) as caught:
            go(r)
        assert caught.value.code == "HZR010"
        assert "command_enforces_read_only = true" in caught.value.hint

    def test_an_empty_command_is_HZR012(self) -> None:
        """A command table needs a command."""
        with pytest.raises(RunnerError) as caught:
            runner([])
        assert caught.value.code == "HZR012"

    def test_an_unknown_placeholder_is_refused_before_running(self, fake_agent: Command) -> None:
        """Placeholders are validated when the runner is built (HZR011)."""
        with pytest.raises(RunnerError) as caught:
            runner([*fake_agent("text"), "{secret}"])
        assert caught.value.code == "HZR011"

    def test_file_output_needs_the_output_file_placeholder(self) -> None:
        """output = "file" without {output_file} could never be read: HZR013."""
        with pytest.raises(RunnerError) as caught:
            runner([sys.executable, "-c", "pass"], output="file")
        assert caught.value.code == "HZR013"

    def test_command_env_may_not_name_a_credential(self, fake_agent: Command) -> None:
        """HZ_CREDENTIAL_* never reaches an agent, even when listed: HZR014."""
        with pytest.raises(RunnerError) as caught:
            runner(fake_agent("env"), command_env=["HZ_CREDENTIAL_TOKEN"])
        assert caught.value.code == "HZR014"

    def test_tools_outside_the_profile_are_refused(self, fake_agent: Command) -> None:
        """A run may only ask for tools of its profile (HZR030)."""
        with pytest.raises(RunnerError) as caught:
            go(runner(fake_agent("text")), tools=["bash"])
        assert caught.value.code == "HZR030"

    def test_a_non_positive_timeout_or_budget_is_refused(self, fake_agent: Command) -> None:
        """Limits must be positive numbers (HZR031)."""
        r = runner(fake_agent("text"))
        for kw in ({"timeout": 0.0}, {"budget": -1.0}, {"timeout": float("nan")}):
            with pytest.raises(RunnerError) as caught:
                go(r, **kw)
            assert caught.value.code == "HZR031"

    def test_a_missing_program_is_HZR002(self, base_env: dict[str, str]) -> None:
        """The program is looked up on the run's PATH before anything starts."""
        with pytest.raises(RunnerError) as caught:
            go(runner(["no-such-agent-cli"], env=base_env))
        assert caught.value.code == "HZR002"

    def test_unenforced_limits_name_what_the_command_does_not_take(
        self, fake_agent: Command
    ) -> None:
        """No {tools} and no {max_usd}: both are listed, and read-only is the user's promise."""
        limits = runner(fake_agent("text"), max_turns=3).unenforced(budget=1.0)
        assert [limit.split(" ")[0] for limit in limits] == [
            "read_only",
            "tools",
            "budget",
            "max_turns",
        ]
        taken = runner([*fake_agent("text"), "t={tools}", "u={max_usd}"]).unenforced(budget=1.0)
        assert [limit.split(" ")[0] for limit in taken] == ["read_only"]


class TestRun:
    def test_a_text_report_with_prompt_and_contract_from_private_files(
        self, fake_agent: Command
    ) -> None:
        """The agent reads both files; the report is its stdout, stripped."""
        result = go(runner(fake_agent("text")))
        assert result.status == "completed" and result.reason is None
        assert result.report == "report on 'check the notes' under 'be read-only'"
        assert result.runner == "fake" and result.transcript.startswith("report on")

    def test_placeholders_are_filled_inside_single_arguments(
        self, fake_agent: Command, tmp_path: Path
    ) -> None:
        """Values with spaces stay one argument; braces written doubled stay literal."""
        command = [
            *fake_agent("argv"),
            "m={model}",
            "tools={tools}",
            "t={timeout_seconds}s",
            "{{x}}",
        ]
        r = runner(command, model="a model", output_format="json", output_key="cwd")
        # a fraction rounds up; the agent must finish, so the timeout is the hang ceiling
        result = go(r, tools=["grep", "read"], timeout=HANG - 0.5, working_dir=tmp_path)
        argv = json.loads(result.transcript)["argv"]
        assert argv[-4:] == ["m=a model", "tools=grep,read", f"t={int(HANG)}s", "{x}"]
        assert result.report == str(tmp_path)

    def test_the_private_files_are_gone_afterwards(
        self, fake_agent: Command, tmp_path: Path
    ) -> None:
        """Prompt, contract and the scratch directory are removed when the run ends."""
        r = CommandRunner("fake", settings(fake_agent("argv")), tmp_parent=tmp_path)
        result = go(r)
        argv = json.loads(result.report)["argv"]
        prompt_file = Path(argv[1].split("=", 1)[1])
        assert prompt_file.parent.parent == tmp_path
        assert list(tmp_path.iterdir()) == []

    def test_the_scratch_directory_is_private(self, fake_agent: Command) -> None:
        """The directory holding prompt and contract is 0700 and the files 0600."""
        code = (
            "import os, sys; p = sys.argv[1]; mode = lambda q: oct(os.stat(q).st_mode & 0o777); "
            "print(mode(os.path.dirname(p)), mode(p))"
        )
        result = go(runner([sys.executable, "-c", code, "{prompt_file}"]))
        assert result.report.split() == ["0o700", "0o600"]

    def test_a_json_report_carries_usage_cost_and_tool_calls(self, fake_agent: Command) -> None:
        """JSON output: the report under its key, and what else the agent said."""
        result = go(runner(fake_agent("json"), output_format="json"))
        assert result.status == "completed"
        assert result.report == "json report on check the notes"
        assert (result.model, result.tool_calls, result.turns) == (
            "fake-model-1",
            {"read": 2, "grep": 1},
            3,
        )
        assert (result.usage.input_tokens, result.usage.cache_read_tokens) == (100, 5)
        assert result.cost_usd == 0.25

    def test_the_report_can_come_from_the_output_file(self, fake_agent: Command) -> None:
        """output = "file" reads {output_file}."""
        result = go(runner(fake_agent("file"), output="file"))
        assert (result.status, result.report) == ("completed", "file report on check the notes")

    def test_a_symlinked_output_file_is_refused(self, fake_agent: Command, tmp_path: Path) -> None:
        """The output file is opened without following links: a link to a secret is not read."""
        secret = tmp_path / "secret.txt"
        secret.write_text("TOP SECRET")
        result = go(runner(fake_agent("symlink", f"target={secret}"), output="file"))
        assert result.status == "failed" and "symbolic link" in (result.reason or "")
        assert "TOP SECRET" not in result.transcript + result.report

    def test_an_output_fifo_is_refused_without_blocking(self, fake_agent: Command) -> None:
        """A FIFO at {output_file} is not a regular file: refused, and the read never hangs."""
        result = go(runner(fake_agent("fifo"), output="file"))
        assert (result.status, result.reason) == (
            "failed",
            "the output file is not a regular file; refused",
        )

    def test_a_missing_output_file_is_a_failed_result(self, fake_agent: Command) -> None:
        """No output file: failed, with the reason, never an exception."""
        result = go(runner(fake_agent("empty"), output="file"))
        assert (result.status, result.reason) == ("failed", "the command wrote no output file")

    @pytest.mark.parametrize(
        ("mode", "output_format", "reason"),
        [
            ("empty", "text", "the output is empty"),
            ("binary", "text", "the output is binary (it holds NUL bytes)"),
            ("not-utf8", "text", "the output is not UTF-8 text"),
            ("bad-json", "json", "the output is not valid JSON"),
            ("text", "json", "the output is not valid JSON"),
            ("huge", "text", "stdout is larger than 8388608 bytes; refused"),
        ],
    )
    def test_hostile_or_missing_output_is_a_failed_result(
        self, fake_agent: Command, mode: str, output_format: str, reason: str
    ) -> None:
        """Empty, binary, non-UTF-8, invalid JSON and oversized output each fail with a reason."""
        result = go(runner(fake_agent(mode), output_format=output_format))
        assert result.status == "failed" and result.report == ""
        assert (result.reason or "").startswith(reason)

    def test_a_failing_command_reports_its_exit_and_stderr(self, fake_agent: Command) -> None:
        """Exit 3 with a message on stderr: failed, and the reason says both."""
        result = go(runner(fake_agent("fail")))
        assert result.status == "failed"
        assert result.reason == "exit 3: boom: the agent fell over"

    @pytest.mark.kill
    def test_a_timeout_kills_the_group_and_is_a_result(
        self, fake_agent: Command, tmp_path: Path, is_dead: Callable[[int], bool]
    ) -> None:
        """An agent ignoring SIGTERM, with a grandchild, ends as status timeout; both die."""
        result = go(runner(fake_agent("hang")), timeout=3.0, working_dir=tmp_path)
        assert result.status == "timeout" and result.reason == "stopped at the 3 s timeout"
        assert is_dead(int((tmp_path / "grandchild.pid").read_text()))

    def test_the_prompt_can_go_on_stdin(self) -> None:
        """prompt_on_stdin = true also pipes the prompt (pi reads it there)."""
        code = "import sys; print(sys.stdin.read())"
        result = go(runner([sys.executable, "-c", code], prompt_on_stdin=True), prompt="hi there")
        assert result.report == "hi there"

    def test_the_environment_is_an_allowlist(
        self, fake_agent: Command, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Only PATH, HOME, LANG, LC_*, TMPDIR and command_env names pass; never HZ_CREDENTIAL_*."""
        monkeypatch.setenv("HZ_CREDENTIAL_X", "do-not-leak")
        monkeypatch.setenv("LC_TIME", "C")
        monkeypatch.setenv("AGENT_KEY", "passed")
        monkeypatch.setenv("UNRELATED", "kept-out")
        r = CommandRunner("fake", settings(fake_agent("env"), command_env=["AGENT_KEY"]), grace=0.2)
        child_env = json.loads(go(r).report)
        allowed = {"PATH", "HOME", "LANG", "TMPDIR", "AGENT_KEY"}
        expected = {k for k in os.environ if k in allowed or k.startswith("LC_")}
        assert set(child_env) == expected
        assert child_env["AGENT_KEY"] == "passed" and "HZ_CREDENTIAL_X" not in child_env
        assert "do-not-leak" not in json.dumps(child_env)

    def test_without_a_working_dir_the_agent_gets_a_fresh_empty_one(
        self, fake_agent: Command, tmp_path: Path
    ) -> None:
        """working_dir None: a private empty directory, removed afterwards."""
        r = CommandRunner(
            "fake",
            settings(fake_agent("argv"), output_format="json", output_key="cwd"),
            tmp_parent=tmp_path,
        )
        result = go(r)
        assert Path(result.report).parent == tmp_path and not Path(result.report).exists()
