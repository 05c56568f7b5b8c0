"""A person's set-up for the model tests: a work folder, a home, a model and a key."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests import forkhz

from .fake_providers import Provider, Script

CONTRACT = """---
name: notes-digest
kind: responsibility
hz:
  namespace: me
  schedule: "0 15 * * FRI"
  timezone: UTC
  render_on_schedule: always
  requires: [files:read, documents:write]
  inputs:
    notes: {from: files.read, args: {path: notes.txt}}
  outputs:
    section: {asset: "file:report.md"}
  publishes: [documents.place_draft]
  agent: {max_usd: 0.5}
---

### Goal

A short digest of the notes at the end of the report.

### Maintains

- `section`: the digest

### Done when

- [ ] every item of `notes` is covered
"""

DONE = "every item of `notes` is covered"
DRAFT = {
    "report": "drafted the digest",
    "draft": {
        "text": "## Digest\n\n- ship the rounding fix\n",
        "output": "section",
        "contract_version": 1,
        "done_when": [{"item": DONE, "met": True, "note": "both notes"}],
    },
}
CREATED = {
    "report": "wrote the contract",
    "amendment": {"text": CONTRACT, "why": "from the sentence"},
}
MODELS = {"anthropic": "anthropic:claude-sonnet-4-5", "openai": "openai-chat:gpt-4o-mini"}
KEY_VARS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
KEY = "sk-the-users-key"
FRESH = {
    "test_cli_models.py": {
        "test_new_then_wake",
        "test_chat_retry_and_the_tick",
        "test_a_stored_credential_is_used",
    },
    "test_cli_paths.py": {
        "test_an_approval_turn_reaches_the_provider_with_the_key",
        "test_answering_a_proposed_write_resumes_on_the_provider",
    },
    "test_keyring.py": {
        "test_a_key_in_the_os_keyring_is_stored_found_and_forgotten",
        "test_the_fail_and_null_backends_are_no_keyring",
    },
    "test_doctor.py": {"test_online_makes_one_request"},
    "test_provider_faults.py": {"test_ctrl_c_during_a_request_stops_the_turn"},
}
"""The tests whose `hz` is the real executable, a fresh interpreter as a user's shell starts
it: one run per provider for each path a key takes from the user's shell, credential store
or OS keyring to the provider (the suite once missed that the command never passed the
key), through each command that reaches a model (`heinzel new` and `wake`, `chat`, `retry`,
the daemon's tick, `approve` then the tick, `answer`) and `system doctor --online`. A
broken import or a provider's SDK loaded at the wrong moment fails these. Every other
model test forks its `hz` from the fork server (tests/forkhz.py): the same command,
environment, client and loopback provider, its own process, exit status and streams; what
it proves is what hz does with a provider's answers, and the SDK then loads once per
worker, not once per command. Also fresh: Ctrl-C during a wake's and a created turn's
request (SIGINT reaches the interpreter a user's shell started), the wake that meets a
provider that never answers (`EXECD_FAULTS` in test_provider_faults.py) and the MCP stdio
server, which the MCP SDK's client starts."""
FRIDAY = "2026-10-30T14:00:00.000Z"


@dataclass
class User:
    """A user at a shell: ``hz`` in ``folder`` with a home, a model and a fake provider."""

    tmp: Path
    api: str
    provider: Provider | None = None
    env: dict[str, str] = field(default_factory=dict)
    execd: bool = True

    @property
    def folder(self) -> Path:
        return self.tmp / "work"

    @property
    def home(self) -> Path:
        return self.tmp / "home"

    def serve(self, script: Script) -> Provider:
        """Start the fake provider and point ``HZ_BASE_URL`` at it."""
        if self.provider is not None:
            self.provider.close()
        self.provider = Provider(self.api, script)
        self.env["HZ_BASE_URL"] = self.provider.base_url
        return self.provider

    def hz(
        self, *args: str, stdin: str | None = None, **extra: str
    ) -> subprocess.CompletedProcess[str]:
        """Run ``hz`` as a person would: exec'd for one test of each key's path per
        provider (`FRESH`), forked from the fork server for the rest (tests/forkhz.py)."""
        env = {**self.env, **extra}
        return (subprocess.run if self.execd else forkhz.run)(
            [sys.executable, "-m", "heinzel", *args],
            cwd=self.folder,
            env=env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def in_process(self, *args: str) -> subprocess.CompletedProcess[str]:
        """The same command with the same environment (nothing else of this process's:
        ``None`` unsets a variable for `CliRunner`) run by `heinzel.cli.group` in this
        process: for set-up that is not what a test proves (a provider's SDK loads once
        per worker instead of once per command)."""
        from click.testing import CliRunner
        from pydantic_ai.models import override_allow_model_requests

        from heinzel.cli import group

        unset: dict[str, str | None] = {k: None for k in os.environ if k not in self.env}
        cwd = Path.cwd()
        os.chdir(self.folder)
        try:
            # as in the `hz` process: Python shows no library's DeprecationWarning (the SDK
            # warns of the model name's end of life; the suite makes them errors), and model
            # requests are allowed (tests/turns/conftest.py forbids them in this process; the
            # provider here is the loopback one `HZ_BASE_URL` names)
            with warnings.catch_warnings(), override_allow_model_requests(True):
                warnings.simplefilter("ignore", DeprecationWarning)
                result = CliRunner().invoke(
                    group(), list(args), env={**unset, **self.env}, catch_exceptions=False
                )
        finally:
            os.chdir(cwd)
        return subprocess.CompletedProcess(
            ["hz", *args], result.exit_code, result.stdout, result.stderr
        )


@pytest.fixture(params=["anthropic", "openai"])
def user(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[User]:
    """A user with the provider's key in its usual variable and a work folder."""
    api = str(request.param)
    execd = request.function.__name__ in FRESH.get(request.path.name, set())
    person = User(tmp_path, api, execd=execd)
    person.folder.mkdir()
    (person.folder / "notes.txt").write_text("ship the rounding fix\n", encoding="utf-8")
    (person.folder / "report.md").write_text("# Report\n\n## Earlier\n\n- done\n", encoding="utf-8")
    person.env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "HZ_HOME": str(person.home),
        "HZ_NOW": FRIDAY,
        "HZ_USER": "me",
        "HZ_MODEL": MODELS[api],
        KEY_VARS[api]: KEY,
    }
    yield person
    if person.provider is not None:
        person.provider.close()


def outcome_after_report(outcome: dict[str, Any]) -> Script:
    """One request with a tool call (``report``), then ``outcome``, for every turn."""
    from .fake_providers import Call, Outcome

    def script(body: dict[str, Any], n: int) -> Any:
        if answered_a_tool(body):
            return Outcome(outcome)
        return Call("report", {"verb": "read", "target": "notes", "description": "read notes"})

    return script


def answered_a_tool(body: dict[str, Any]) -> bool:
    """Whether the request's last message returns a tool's result (either API)."""
    last = body["messages"][-1]
    if last.get("role") == "tool":
        return True
    content = last.get("content")
    return isinstance(content, list) and any(
        isinstance(part, dict) and part.get("type") == "tool_result" for part in content
    )


Made = Callable[..., Any]
