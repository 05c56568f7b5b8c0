"""The pi configuration: its parser over real recordings, and the documented TOML run end to end."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

import pytest

from heinzel.runners.command import CommandRunner
from heinzel.runners.pi import PI_RUNNER_TOML, parse_pi_events
from heinzel.runners.settings import CommandSettings, parse_runners_table
from tests.waits import HANG

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "runners"


def fake_pi(bin_dir: Path, fixture: Path) -> Path:
    """A `pi` on PATH that records its argv, stdin and contract, then prints a recording."""
    bin_dir.mkdir()
    record = bin_dir / "record.json"
    script = bin_dir / "pi"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        "args = sys.argv[1:]\n"
        "contract = open(args[args.index('--append-system-prompt') + 1]).read()\n"
        f"json.dump({{'argv': args, 'stdin': sys.stdin.read(), 'contract': contract,\n"
        f"           'env': sorted(os.environ)}}, open({str(record)!r}, 'w'))\n"
        f"sys.stdout.write(open({str(fixture)!r}).read())\n"
    )
    script.chmod(0o755)
    return record


def pi_runner(bin_dir: Path, home: Path) -> CommandRunner:
    settings = parse_runners_table(tomllib.loads(PI_RUNNER_TOML)["runners"])["pi"]
    assert isinstance(settings, CommandSettings)
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "HOME": str(home),
        "ANTHROPIC_API_KEY": "sk-ant-dummy",
        "HZ_CREDENTIAL_PI": "never",
    }
    return CommandRunner("pi", settings, environ=env, grace=0.2)


class TestParsePiEvents:
    def test_a_recorded_success(self) -> None:
        """Report, tool calls, turns, usage and cost from a real pi 0.73.1 run."""
        parsed = parse_pi_events((FIXTURES / "pi-success.jsonl").read_bytes())
        assert parsed.reason is None
        assert parsed.report == "The directory holds notes.txt; it says hello."
        assert (parsed.model, parsed.tool_calls, parsed.turns) == (
            "claude-sonnet-4-5",
            {"read": 1, "ls": 1},
            3,
        )
        assert parsed.usage.output_tokens > 0 and parsed.cost_usd == pytest.approx(0.0126)

    def test_a_recorded_failure_behind_exit_0(self) -> None:
        """An unreachable API: pi exits 0, and the events say the model call failed."""
        parsed = parse_pi_events((FIXTURES / "pi-unreachable.jsonl").read_bytes())
        assert parsed.report == ""
        assert parsed.reason == "pi's model call failed: Connection error."

    def test_a_run_that_did_not_end_is_failed(self) -> None:
        """Cut off before agent_end (or while a retry is pending): not a report."""
        lines = (FIXTURES / "pi-success.jsonl").read_text().splitlines()
        cut = "\n".join(line for line in lines if '"type":"agent_end"' not in line)
        assert parse_pi_events(cut.encode()).reason == (
            "pi did not finish: its run did not end (no agent_end)"
        )

    def test_garbage_and_foreign_lines_are_tolerated(self) -> None:
        """Non-JSON lines, arrays and unknown event types are skipped."""
        lines = (FIXTURES / "pi-success.jsonl").read_text().splitlines()
        noisy = "\n".join(["not json", "[1,2]", '{"type":"brand_new"}', *lines, "{broken"])
        assert parse_pi_events(noisy.encode()).report.startswith("The directory holds")

    def test_no_assistant_message_is_failed(self) -> None:
        """Only the session header (pi found no key): failed with the reason."""
        header = b'{"type":"session","version":3,"id":"x","timestamp":"t","cwd":"/"}\n'
        assert parse_pi_events(header).reason == "pi produced no assistant message"

    def test_binary_output_is_failed(self) -> None:
        """NUL bytes are refused before any JSON is read."""
        assert parse_pi_events(b"\x00\x01").reason == "the output is binary (it holds NUL bytes)"


class TestDocumentedConfiguration:
    def test_the_docs_show_the_tested_toml(self) -> None:
        """docs/runners.md holds PI_RUNNER_TOML verbatim, so the copy-pasted table is this one."""
        assert PI_RUNNER_TOML in (ROOT / "docs" / "runners.md").read_text()

    def test_pi_success_through_the_command_runner(self, tmp_path: Path) -> None:
        """The documented table runs pi read-only, prompt on stdin, contract as a file."""
        record = fake_pi(tmp_path / "bin", FIXTURES / "pi-success.jsonl")
        result = pi_runner(tmp_path / "bin", tmp_path).run(
            "What do the notes say?", contract="Be brief.", tools=[], timeout=HANG, budget=0.2
        )
        assert result.status == "completed"
        assert result.report == "The directory holds notes.txt; it says hello."
        assert result.tool_calls == {"read": 1, "ls": 1} and result.cost_usd == pytest.approx(
            0.0126
        )
        seen = json.loads(record.read_text())
        assert seen["stdin"] == "What do the notes say?" and seen["contract"] == "Be brief."
        argv = seen["argv"]
        assert argv[argv.index("--tools") + 1] == "read,grep,find,ls"
        assert argv[argv.index("--model") + 1] == "anthropic/claude-sonnet-4-5"
        assert argv[:2] == ["--mode", "json"] and "--no-session" in argv
        assert "HZ_CREDENTIAL_PI" not in seen["env"] and "ANTHROPIC_API_KEY" in seen["env"]
        assert any(limit.startswith("budget") for limit in result.unenforced_limits)

    def test_pi_failure_with_exit_0_is_a_failed_result(self, tmp_path: Path) -> None:
        """pi exits 0 after its model call failed; the result is failed with pi's error."""
        fake_pi(tmp_path / "bin", FIXTURES / "pi-unreachable.jsonl")
        result = pi_runner(tmp_path / "bin", tmp_path).run(
            "What do the notes say?",
            contract="Be brief.",
            tools=["read"],
            timeout=HANG,
            budget=None,
        )
        assert result.status == "failed" and result.report == ""
        assert result.reason == "pi's model call failed: Connection error."
        assert '"auto_retry_end"' in result.transcript
