"""The handoff's pure parts: its directory, its share, and what spine and body keep."""

from __future__ import annotations

import stat
from collections.abc import Sequence
from pathlib import Path

import pytest

from heinzel.runners.base import AgentResult, AgentRunner, Usage
from heinzel.runners.errors import RunnerError
from heinzel.runners.handoff import (
    INTERRUPTED_RESULT,
    HandoffShare,
    check_files,
    handoff_instruction,
    handoff_share,
    handoff_workdir,
    interrupted_record,
    run_handoff,
    tool_result_text,
)
from ledger.event import sha256_hex


class RecordingRunner:
    """A fake runner: records what it was given and what its directory held, returns a result."""

    name = "fake"

    def __init__(self, result: AgentResult) -> None:
        self.result = result
        self.calls: list[dict[str, object]] = []

    def run(
        self,
        prompt: str,
        *,
        contract: str,
        tools: Sequence[str],
        timeout: float,
        budget: float | None,
        working_dir: Path | None = None,
    ) -> AgentResult:
        assert working_dir is not None
        held = {
            str(p.relative_to(working_dir)): p.read_text()
            for p in sorted(working_dir.rglob("*"))
            if p.is_file()
        }
        self.calls.append(
            {
                "prompt": prompt,
                "contract": contract,
                "tools": list(tools),
                "timeout": timeout,
                "budget": budget,
                "dir": working_dir,
                "held": held,
            }
        )
        return self.result


def result(**fields: object) -> AgentResult:
    base: dict[str, object] = {
        "runner": "fake",
        "model": "m-1",
        "status": "completed",
        "report": "All links resolve.",
        "tool_calls": {"Read": 3},
        "turns": 2,
        "usage": Usage(input_tokens=10, output_tokens=5),
        "cost_usd": 0.03,
        "duration_s": 4.5,
        "transcript": '{"type":"result"}',
        "unenforced_limits": ("--restricted (not offered)",),
    }
    base.update(fields)
    return AgentResult(**base)  # type: ignore[arg-type]


class TestFiles:
    @pytest.mark.parametrize(
        "name", ["", "/etc/passwd", "../up.md", "a/../b", "./a", "a//b", "a\\b", "a/", "x\x00"]
    )
    def test_a_name_that_is_not_a_plain_relative_path_is_HZR040(self, name: str) -> None:
        """Absolute paths, '..', '.', empty parts and backslashes are refused."""
        with pytest.raises(RunnerError) as caught:
            check_files({name: "text"})
        assert caught.value.code == "HZR040"

    @pytest.mark.parametrize(
        ("name", "content"),
        [
            (".env", "A=1"),
            ("config/.env.production", "A=1"),
            ("id_ed25519", "x"),
            ("deploy/server.pem", "x"),
            (".ssh/config", "Host x"),
            (".aws/config", "[default]"),
            ("credentials.json", "{}"),
            ("notes.md", "-----BEGIN OPENSSH PRIVATE KEY-----\nabc"),
            ("notes.md", "key: AKIAABCDEFGHIJKLMNOP"),
            ("notes.md", "token ghp_" + "a" * 36),
            ("notes.md", "ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijklmnopqrstuv"),
            ("notes.md", "HZ_CREDENTIAL_GITHUB = x"),
        ],
    )
    def test_a_credential_by_name_or_content_is_HZR041(self, name: str, content: str) -> None:
        """Credential files and key material never reach an agent."""
        with pytest.raises(RunnerError) as caught:
            check_files({name: content})
        assert caught.value.code == "HZR041"

    def test_ordinary_documents_pass(self) -> None:
        """Release notes mentioning keys in prose are fine."""
        files = {"docs/release.md": "Rotate your API key monthly.", "id_rsa.pub.md": "about keys"}
        assert [str(p) for p in check_files(files)] == ["docs/release.md", "id_rsa.pub.md"]

    def test_the_workdir_is_private_holds_the_files_and_is_removed(self, tmp_path: Path) -> None:
        """0700 directories, 0600 files, nested paths created, all gone afterwards."""
        with handoff_workdir({"a.md": "A", "sub/dir/b.md": "B"}, tmp_path) as root:
            assert (root / "a.md").read_text() == "A" and (root / "sub/dir/b.md").read_text() == "B"
            modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in [root, *root.rglob("*")]}
            assert modes == {
                root.name: 0o700,
                "a.md": 0o600,
                "sub": 0o700,
                "dir": 0o700,
                "b.md": 0o600,
            }
        assert list(tmp_path.iterdir()) == []

    def test_a_refused_file_creates_nothing(self, tmp_path: Path) -> None:
        """Files are checked before the directory exists."""
        with pytest.raises(RunnerError), handoff_workdir({"ok.md": "x", ".env": "A=1"}, tmp_path):
            pass
        assert list(tmp_path.iterdir()) == []


class TestShare:
    def test_a_share_of_cap_and_time(self) -> None:
        """budget_share of both the remaining cap and the remaining time."""
        assert handoff_share(0.5, remaining_usd=0.8, remaining_s=600) == HandoffShare(0.4, 300.0)

    def test_an_uncapped_turn_gives_an_uncapped_handoff(self) -> None:
        """No cap on the turn: budget None, time still shared."""
        assert handoff_share(1.0, remaining_usd=None, remaining_s=60) == HandoffShare(None, 60.0)

    @pytest.mark.parametrize("share", [0.0, -0.1, 1.5, float("nan")])
    def test_a_share_outside_0_1_is_HZR042(self, share: float) -> None:
        """The share is a fraction greater than 0 and at most 1."""
        with pytest.raises(RunnerError) as caught:
            handoff_share(share, remaining_usd=1.0, remaining_s=10)
        assert caught.value.code == "HZR042"

    @pytest.mark.parametrize(("usd", "seconds"), [(0.0, 10.0), (1.0, 0.0), (-1.0, 5.0)])
    def test_nothing_left_is_HZR042(self, usd: float, seconds: float) -> None:
        """A spent cap or an exhausted timeout leaves nothing to hand over."""
        with pytest.raises(RunnerError) as caught:
            handoff_share(0.5, remaining_usd=usd, remaining_s=seconds)
        assert caught.value.code == "HZR042"


class TestRunHandoff:
    def test_one_run_with_files_share_and_contract(self, tmp_path: Path) -> None:
        """The runner runs once, in a directory holding the files, with the share as its limits."""
        runner = RecordingRunner(result())
        assert isinstance(runner, AgentRunner)
        outcome = run_handoff(
            runner,
            "Check the links.",
            {"page.md": "see [x](y)"},
            contract="The contract body.",
            share=HandoffShare(0.2, 120.0),
            tools=["Read"],
            parent=tmp_path,
        )
        [call] = runner.calls
        assert call["held"] == {"page.md": "see [x](y)"}
        assert (call["prompt"], call["contract"], call["tools"]) == (
            "Check the links.",
            "The contract body.",
            ["Read"],
        )
        assert (call["timeout"], call["budget"]) == (120.0, 0.2)
        assert not Path(str(call["dir"])).exists()
        assert outcome.tool_result == "All links resolve."

    def test_the_spine_record_holds_hashes_not_text(self, tmp_path: Path) -> None:
        """step.handoff: runner, model, status, counts, cost, duration and the two hashes."""
        outcome = run_handoff(
            RecordingRunner(result()),
            "Check the links.",
            {},
            contract="c",
            share=HandoffShare(None, 5.0),
            parent=tmp_path,
        )
        assert outcome.record.model_dump() == {
            "runner": "fake",
            "model": "m-1",
            "status": "completed",
            "tool_calls": {"Read": 3},
            "turns": 2,
            "cost_usd": 0.03,
            "duration_s": 4.5,
            "task_sha256": sha256_hex(b"Check the links."),
            "report_sha256": sha256_hex(b"All links resolve."),
        }

    def test_the_body_holds_task_report_and_transcript(self, tmp_path: Path) -> None:
        """The turn body keeps the texts the spine must not hold."""
        outcome = run_handoff(
            RecordingRunner(result()),
            "Check.",
            {"a.md": "x"},
            contract="c",
            share=HandoffShare(None, 5.0),
            parent=tmp_path,
        )
        body = outcome.body
        assert (body.task, body.files, body.report, body.transcript) == (
            "Check.",
            ("a.md",),
            "All links resolve.",
            '{"type":"result"}',
        )

    def test_a_run_that_did_not_complete_tells_the_model_why(self) -> None:
        """The tool result of a timeout names the status, the reason and the unenforced limits."""
        text = tool_result_text(
            result(status="timeout", report="", reason="stopped at the 60 s timeout")
        )
        assert text == (
            "The handoff to fake ended timeout: stopped at the 60 s timeout.\n"
            "Not enforced: --restricted (not offered)."
        )

    def test_an_interrupted_handoff_has_a_record_and_no_report(self) -> None:
        """A crash mid-handoff is recorded as interrupted, with the task's hash and no report."""
        record = interrupted_record("claude", "Check.")
        assert (record.status, record.report_sha256, record.task_sha256) == (
            "interrupted",
            None,
            sha256_hex(b"Check."),
        )
        assert "not run again" in INTERRUPTED_RESULT


class TestInstruction:
    def test_without_a_runner_the_instructions_say_there_is_no_handoff(self) -> None:
        """No runner bound: the tool is absent and the model is told so."""
        assert handoff_instruction(None).startswith("No coding agent is bound")

    def test_with_a_runner_the_instructions_name_it_and_the_rules(self) -> None:
        """The bound runner is named, with read-only, the share and the no-rerun rule."""
        text = handoff_instruction("claude")
        assert "'claude'" in text and "read-only" in text and "never run twice" in text
