"""The `hz` executable's approval, answer and handoff paths against the loopback providers."""

from __future__ import annotations

import json
import sys
from typing import Any

from ledger.spine import read_events

from .conftest import DRAFT, KEY, User, answered_a_tool, outcome_after_report
from .fake_providers import Call, Outcome
from .test_cli_models import _created, _events

NOTHING = {"report": "approved as drafted", "nothing_to_do": True, "reason": "nothing to learn"}


def _causes(user: User) -> list[str]:
    return [e.data["cause"] for e in _events(user) if e.kind == "turn.started"]


def test_an_approval_turn_reaches_the_provider_with_the_key(user: User) -> None:
    """`hz approve` of a draft, then the tick: the approval turn asks the provider, with the key."""
    _created(user)
    user.serve(outcome_after_report(DRAFT))
    woke = user.hz("heinzel", "wake", "notes-digest")
    assert woke.returncode == 0, woke.stderr
    approved = user.hz("approve", "notes-digest")
    assert approved.returncode == 0, approved.stderr
    provider = user.serve(lambda body, n: Outcome(NOTHING))
    tick = user.hz("system", "daemon", "tick")
    assert tick.returncode == 0, tick.stderr
    assert _causes(user)[-1] == "approval", _causes(user)
    assert len(provider.seen) == 1 and provider.keys() == [KEY]
    finished = [e.data for e in _events(user) if e.kind == "turn.finished"]
    assert finished[-1]["disposition"] != "failed", finished


def test_answering_a_proposed_write_resumes_on_the_provider(user: User) -> None:
    """A chat turn proposes `pause`; `hz heinzel answer NAME yes` resumes it on the provider,
    which reads the tool's result, with the key on every request."""
    _created(user)

    def script(body: dict[str, Any], n: int) -> Any:
        if answered_a_tool(body):
            return Outcome(DRAFT)
        return Call("pause", {"reason": "the notes are stale"})

    provider = user.serve(script)
    chat = user.hz("heinzel", "chat", "notes-digest", "pause yourself")
    assert chat.returncode == 0, chat.stderr
    assert len(provider.seen) == 1
    answered = user.hz("heinzel", "answer", "notes-digest", "yes", "--json")
    assert answered.returncode == 0, answered.stderr
    assert json.loads(answered.stdout)["disposition"] == "drafted", answered.stdout
    assert len(provider.seen) == 2 and answered_a_tool(provider.seen[1].body)
    assert provider.keys() == [KEY, KEY]
    assert [e for e in _events(user) if e.kind == "heinzel.paused"]


RUNNER = """\
import json, os, sys
with open(sys.argv[1], "w", encoding="utf-8") as out:
    json.dump(dict(os.environ), out)
print("the notes say: ship the rounding fix")
"""


def test_a_handoff_runs_without_the_provider_key(user: User) -> None:
    """The model hands off to a command runner: the runner's report reaches the provider, the
    provider's key does not reach the runner's environment."""
    _created(user)
    script_path = user.tmp / "runner.py"
    script_path.write_text(RUNNER, encoding="utf-8")
    seen_env = user.tmp / "runner-env.json"
    config = user.tmp / "hz.toml"
    config.write_text(
        "[runners.reader]\n"
        'kind = "command"\n'
        f"command = [{json.dumps(sys.executable)}, {json.dumps(str(script_path))}, "
        f"{json.dumps(str(seen_env))}]\n"
        "command_enforces_read_only = true\n",
        encoding="utf-8",
    )
    user.env["HZ_CONFIG"] = str(config)

    def script(body: dict[str, Any], n: int) -> Any:
        if answered_a_tool(body):
            return Outcome(DRAFT)
        return Call("handoff", {"task": "read the notes", "files": {}, "budget_share": 0.5})

    provider = user.serve(script)
    woke = user.hz("heinzel", "wake", "notes-digest", "--json")
    assert woke.returncode == 0, woke.stderr
    assert json.loads(woke.stdout)["disposition"] == "drafted", woke.stdout
    environment = json.loads(seen_env.read_text(encoding="utf-8"))
    assert environment.get("PATH")  # the runner really ran, with the allowlist
    assert KEY not in json.dumps(environment)
    assert not {"ANTHROPIC_API_KEY", "OPENAI_API_KEY"} & set(environment)
    assert "ship the rounding fix" in json.dumps(provider.seen[1].body)
    assert provider.keys() == [KEY, KEY]
    [spine] = (user.home / "heinzel").glob("hz-*/session.jsonl")
    assert any(e.kind == "step.handoff" for e in read_events(spine))
