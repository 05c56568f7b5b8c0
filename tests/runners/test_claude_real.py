"""The Claude Code adapter against the real `claude` binary and a fake Messages API on loopback.

The binary is @anthropic-ai/claude-code 2.1.197 installed by `make test` into .venv/claude;
it talks only to 127.0.0.1 (ANTHROPIC_BASE_URL) with a dummy key, in a fresh HOME. The fake
API follows a script, so every run is deterministic.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from heinzel.runners.claude_code import ClaudeCodeRunner
from heinzel.runners.settings import ClaudeCodeSettings, parse_runner_settings
from tests.waits import HANG

PROMPT = "What do the notes say?"
CONTRACT = "CONTRACT-7f3a: answer in one sentence."


def make_runner(
    claude: str,
    home: Path,
    base_url: str,
    tmp_parent: Path,
    retries: str = "1",
    **table: object,
) -> ClaudeCodeRunner:
    settings = parse_runner_settings(
        "claude",
        {"kind": "claude-code", "executable": claude, "model": "claude-sonnet-4-5", **table},
    )
    assert isinstance(settings, ClaudeCodeSettings)
    environ = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "sk-ant-dummy-not-a-key",
        "CLAUDE_CODE_MAX_RETRIES": retries,
        "HZ_CREDENTIAL_X": "never-sent",
    }
    return ClaudeCodeRunner("claude", settings, environ=environ, grace=0.5, tmp_parent=tmp_parent)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("hello from notes\n")
    return work


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    home, scratch = tmp_path / "home", tmp_path / "scratch"
    home.mkdir()
    scratch.mkdir()
    return home, scratch


def read_then(fake_api: ModuleType, workdir: Path, second: tuple[str, dict[str, Any]]):
    """Reply 1: text and Read notes.txt; reply 2: the given tool; reply 3: the final text."""

    def script(tool_results: int):
        if tool_results == 0:
            return [
                fake_api.text("I'll read the notes."),
                fake_api.tool_use(1, "Read", {"file_path": str(workdir / "notes.txt")}),
            ], "tool_use"
        if tool_results == 1:
            return [fake_api.tool_use(2, *second)], "tool_use"
        return [fake_api.text("The notes say hello.")], "end_turn"

    return script


class TestRealClaudeCode:
    def test_a_success_with_tool_calls(
        self, claude_executable: str, fake_api: ModuleType, workdir: Path, dirs: tuple[Path, Path]
    ) -> None:
        """Two tool calls, a final text: completed, with counts, turns, usage and cost."""
        home, scratch = dirs
        with fake_api.Server(read_then(fake_api, workdir, ("Glob", {"pattern": "*.txt"}))) as api:
            runner = make_runner(claude_executable, home, api.url, scratch)
            result = runner.run(
                PROMPT, contract=CONTRACT, tools=[], timeout=HANG, budget=1.0, working_dir=workdir
            )
            requests = api.state.message_requests()
        assert (result.status, result.reason) == ("completed", None)
        assert result.report == "The notes say hello."
        assert result.tool_calls == {"Read": 1, "Glob": 1} and result.turns == 3
        assert result.model == "claude-sonnet-4-5"
        assert (result.usage.input_tokens, result.usage.output_tokens) == (3600, 120)
        assert result.cost_usd == pytest.approx(0.0126)
        assert result.unenforced_limits == ("--restricted (not offered by Claude Code 2.1.197)",)
        assert '"type":"result"' in result.transcript
        # what reached the API: the profile's tools only, the contract, the prompt from stdin
        assert len(requests) == 3
        assert {tool["name"] for tool in requests[0]["tools"]} == {"Read", "Grep", "Glob"}
        assert CONTRACT in json.dumps(requests[0]["system"])
        assert PROMPT in json.dumps(requests[0]["messages"])
        assert "never-sent" not in json.dumps(requests)
        assert list(scratch.iterdir()) == []  # the contract's private directory is gone

    def test_a_tool_outside_the_profile_is_never_run(
        self, claude_executable: str, fake_api: ModuleType, workdir: Path, dirs: tuple[Path, Path]
    ) -> None:
        """The model asks for Bash `touch`; it is not available, and nothing is written."""
        home, scratch = dirs
        bash = ("Bash", {"command": "touch made-by-agent.txt", "description": "write a file"})
        with fake_api.Server(read_then(fake_api, workdir, bash)) as api:
            result = make_runner(claude_executable, home, api.url, scratch).run(
                PROMPT,
                contract=CONTRACT,
                tools=["Read"],
                timeout=HANG,
                budget=1.0,
                working_dir=workdir,
            )
            last = api.state.message_requests()[-1]
        assert result.status == "completed"
        assert sorted(p.name for p in workdir.iterdir()) == ["notes.txt"]
        assert "No such tool available: Bash" in json.dumps(last["messages"])

    def test_a_budget_stop(
        self, claude_executable: str, fake_api: ModuleType, workdir: Path, dirs: tuple[Path, Path]
    ) -> None:
        """Spend past --max-budget-usd after the first reply: status budget, the tool not run."""
        home, scratch = dirs
        with fake_api.Server(read_then(fake_api, workdir, ("Glob", {"pattern": "*"}))) as api:
            result = make_runner(claude_executable, home, api.url, scratch).run(
                PROMPT, contract=CONTRACT, tools=[], timeout=HANG, budget=0.001, working_dir=workdir
            )
            calls = len(api.state.message_requests())
        assert (result.status, result.reason) == ("budget", "Reached maximum budget ($0.001)")
        assert result.report == "" and calls == 1
        assert result.cost_usd == pytest.approx(0.0042)
        assert result.usage.input_tokens == 1200

    def test_a_max_turns_stop(
        self, claude_executable: str, fake_api: ModuleType, workdir: Path, dirs: tuple[Path, Path]
    ) -> None:
        """max_turns = 1 stops after the first round-trip: status budget, with the CLI's reason."""
        home, scratch = dirs
        with fake_api.Server(read_then(fake_api, workdir, ("Glob", {"pattern": "*"}))) as api:
            result = make_runner(claude_executable, home, api.url, scratch, max_turns=1).run(
                PROMPT, contract=CONTRACT, tools=[], timeout=HANG, budget=1.0, working_dir=workdir
            )
        assert result.status == "budget"
        assert result.reason == "Reached maximum number of turns (1)"
        assert result.tool_calls == {"Read": 1}

    def test_an_unreachable_api(
        self, claude_executable: str, closed_port: int, dirs: tuple[Path, Path]
    ) -> None:
        """Nothing listens on the port: failed, with the CLI's error text, never an exception."""
        home, scratch = dirs
        runner = make_runner(claude_executable, home, f"http://127.0.0.1:{closed_port}", scratch)
        result = runner.run(PROMPT, contract=CONTRACT, tools=[], timeout=HANG, budget=1.0)
        assert result.status == "failed" and result.report == ""
        assert result.reason == "API Error: Unable to connect to API (ConnectionRefused)"

    def test_an_empty_profile_offers_no_tools(
        self, claude_executable: str, fake_api: ModuleType, dirs: tuple[Path, Path]
    ) -> None:
        """tools = [] passes --tools= and the API sees no tool at all."""
        home, scratch = dirs
        with fake_api.Server(lambda _: ([fake_api.text("plain answer")], "end_turn")) as api:
            runner = make_runner(claude_executable, home, api.url, scratch, tools=[])
            result = runner.run(PROMPT, contract=CONTRACT, tools=[], timeout=HANG, budget=None)
            [request] = api.state.message_requests()
        assert (result.status, result.report) == ("completed", "plain answer")
        assert request.get("tools", []) == []

    @pytest.mark.kill
    def test_a_timeout_stops_the_real_cli(
        self, claude_executable: str, closed_port: int, dirs: tuple[Path, Path]
    ) -> None:
        """With its default retries an unreachable API outlasts 2 s: status timeout, a result."""
        home, scratch = dirs
        url = f"http://127.0.0.1:{closed_port}"
        runner = make_runner(claude_executable, home, url, scratch, retries="10")
        result = runner.run(PROMPT, contract=CONTRACT, tools=[], timeout=2.0, budget=1.0)
        assert (result.status, result.reason) == ("timeout", "stopped at the 2 s timeout")
        assert result.report == ""

    def test_reads_outside_the_working_directory_are_denied(
        self,
        claude_executable: str,
        fake_api: ModuleType,
        workdir: Path,
        dirs: tuple[Path, Path],
        tmp_path: Path,
    ) -> None:
        """Even with user settings allowing Read everywhere, reading outside the dir is denied."""
        home, scratch = dirs
        (home / ".claude").mkdir()
        allow_all = '{"permissions": {"allow": ["Read", "Grep"]}}'
        (home / ".claude" / "settings.json").write_text(allow_all)
        secret = tmp_path / "elsewhere" / "secret.txt"
        secret.parent.mkdir()
        secret.write_text("TOPSECRET-41\n")

        def script(tool_results: int):
            if tool_results == 0:
                return [fake_api.tool_use(1, "Read", {"file_path": str(secret)})], "tool_use"
            if tool_results == 1:
                grep = {
                    "pattern": "TOPSECRET",
                    "path": str(secret.parent),
                    "output_mode": "content",
                }
                return [fake_api.tool_use(2, "Grep", grep)], "tool_use"
            return [fake_api.text("I could not read it.")], "end_turn"

        with fake_api.Server(script) as api:
            result = make_runner(claude_executable, home, api.url, scratch).run(
                PROMPT, contract=CONTRACT, tools=[], timeout=HANG, budget=1.0, working_dir=workdir
            )
            requests = api.state.message_requests()
        sent = json.dumps(requests)
        assert result.status == "completed" and result.tool_calls == {"Read": 1, "Grep": 1}
        assert "TOPSECRET-41" not in sent and "TOPSECRET-41" not in result.transcript
        assert json.dumps(requests[-1]["messages"]).count("Permission to use") == 2
