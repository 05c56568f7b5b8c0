"""The `hz` executable against loopback Anthropic and OpenAI servers, with the real clients."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from ledger.spine import read_events

from .conftest import CREATED, DRAFT, KEY, User, outcome_after_report
from .fake_providers import Outcome


def _events(user: User) -> list[Any]:
    [spine] = (user.home / "heinzel").glob("hz-*/session.jsonl")
    return list(read_events(spine))


def _created(user: User) -> None:
    user.serve(lambda body, n: Outcome(CREATED))
    made = user.hz("heinzel", "new", "summarise notes.txt into report.md every Friday at three")
    assert made.returncode == 0, made.stderr
    approved = user.hz("approve", "notes-digest")
    assert approved.returncode == 0, approved.stderr


class TestEveryPathUsesTheKey:
    """Each command that runs a model reaches the provider with the user's key."""

    def test_new_then_wake(self, user: User) -> None:
        """A sentence becomes a contract, and a wake drafts, each request with the key."""
        _created(user)
        assert user.provider is not None
        assert user.provider.keys() == [KEY]
        provider = user.serve(outcome_after_report(DRAFT))
        woke = user.hz("heinzel", "wake", "notes-digest", "--json")
        assert woke.returncode == 0, woke.stderr
        assert json.loads(woke.stdout)["disposition"] == "drafted", woke.stdout
        assert provider.keys() == [KEY, KEY]
        requests = [e.data for e in _events(user) if e.kind == "model.request"]
        assert [r["tokens"] for r in requests] == [1100] * 3
        assert all(Decimal(str(r["usd"])) > 0 for r in requests), requests
        assert "## Digest" in (user.folder / "report.md").read_text(encoding="utf-8")
