"""The `hz` executable against loopback Anthropic and OpenAI servers, with the real clients."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from ledger.spine import read_events

from .conftest import CREATED, DRAFT, KEY, User, answered_a_tool, outcome_after_report
from .fake_providers import Http, Outcome, Raw


def _events(user: User) -> list[Any]:
    [spine] = (user.home / "heinzel").glob("hz-*/session.jsonl")
    return list(read_events(spine))


def _created(user: User, *, as_process: bool = False) -> None:
    """notes-digest created from a sentence on the provider and approved: set-up, so in this
    process unless ``as_process`` (the tests that prove creation reaches the provider)."""
    run = user.hz if as_process else user.in_process
    user.serve(lambda body, n: Outcome(CREATED))
    made = run("heinzel", "new", "summarise notes.txt into report.md every Friday at three")
    assert made.returncode == 0, made.stderr
    approved = run("approve", "notes-digest")
    assert approved.returncode == 0, approved.stderr


class TestEveryPathUsesTheKey:
    """Each command that runs a model reaches the provider with the user's key."""

    def test_new_then_wake(self, user: User) -> None:
        """A sentence becomes a contract, and a wake drafts, each request with the key."""
        _created(user, as_process=True)
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

    def test_a_stored_credential_is_used(self, user: User) -> None:
        """Without the variable, the key `hz system credential set` stored reaches the
        provider; once forgotten, a wake is refused before its turn starts."""
        variable = "ANTHROPIC_API_KEY" if user.api == "anthropic" else "OPENAI_API_KEY"
        del user.env[variable]
        provider = "anthropic" if user.api == "anthropic" else "openai"
        stored = user.hz("system", "credential", "set", provider, stdin="sk-stored\n")
        assert stored.returncode == 0, stored.stderr
        path = user.tmp / "config" / "hz" / "credentials.json"
        assert path.stat().st_mode & 0o777 == 0o600
        listed = user.hz("system", "credential", "list")
        assert "sk-stored" not in listed.stdout and f"{provider}: stored (used)" in listed.stdout
        _created(user, as_process=True)
        assert user.provider is not None and user.provider.keys() == ["sk-stored"]
        written = b"".join(p.read_bytes() for p in user.home.rglob("*") if p.is_file())
        assert b"sk-stored" not in written
        user.hz("system", "credential", "forget", provider)
        before = [e for e in _events(user) if e.kind == "turn.started"]
        missing = user.hz("heinzel", "wake", "notes-digest")
        assert missing.returncode == 1 and "HZE003" in missing.stderr, missing.stderr
        assert [e for e in _events(user) if e.kind == "turn.started"] == before  # refused first

    def test_chat_retry_and_the_tick(self, user: User) -> None:
        """chat, retry and a scheduled tick each run a turn on the provider, with the key."""
        _created(user)
        provider = user.serve(outcome_after_report(DRAFT))
        chat = user.hz("heinzel", "chat", "notes-digest", "keep it short")
        assert chat.returncode == 0, chat.stderr
        retry = user.hz("heinzel", "retry", "notes-digest", "shorter still")
        assert retry.returncode == 0, retry.stderr
        tick = user.hz("system", "daemon", "tick", HZ_NOW="2026-10-30T15:00:30.000Z")
        assert tick.returncode == 0, tick.stderr
        causes = [e.data["cause"] for e in _events(user) if e.kind == "turn.started"]
        assert causes[1:] == ["asked", "retry", "schedule"], causes
        assert len(provider.seen) == 6 and set(provider.keys()) == {KEY}
        assert any("shorter still" in json.dumps(s.body) for s in provider.seen[2:4])


class TestProviderFailures:
    """What the provider does wrong ends the turn with a code, never a traceback or a loss."""

    def test_a_429_is_retried(self, user: User) -> None:
        """A rate limit is asked again (tenacity, Retry-After honoured); the refused attempt is
        neither recorded nor charged, and the turn drafts."""
        _created(user)
        draft = outcome_after_report(DRAFT)
        provider = user.serve(lambda body, n: Http(429) if n == 1 else draft(body, n))
        woke = user.hz("heinzel", "wake", "notes-digest", "--json")
        assert json.loads(woke.stdout)["disposition"] == "drafted", woke.stdout
        assert len(provider.seen) == 3 and set(provider.keys()) == {KEY}
        requests = [e for e in _events(user) if e.kind == "model.request"]
        assert len(requests) == 3, requests  # the created turn's one, then the wake's two

    def test_a_500_that_stays_is_a_coded_failure(self, user: User) -> None:
        """A provider that keeps failing: three attempts in all, then HZE019 (a 5xx) with its
        fix and exit status 1; nothing recorded as spent."""
        _created(user)
        provider = user.serve(lambda body, n: Http(500))
        woke = user.hz("heinzel", "wake", "notes-digest", "--json")
        shown = json.loads(woke.stdout)
        assert (shown["disposition"], shown["error"]) == ("failed", "provider-http-500"), shown
        assert woke.returncode == 1
        assert "HZE019: the provider answered HTTP 500 to 3 attempts" in woke.stderr
        assert "hint: the provider is failing" in woke.stderr, woke.stderr
        hint = woke.stderr.splitlines()[-1]
        assert "`hz heinzel retry notes-digest`" in hint and "NAME" not in hint, hint
        assert len(provider.seen) == 3
        requests = [e for e in _events(user) if e.kind == "model.request"]
        assert len(requests) == 1, requests  # the created turn's only

    def test_a_malformed_reply_is_a_coded_failure(self, user: User) -> None:
        """A reply that is not the API's shape: HZE012 naming base_url, exit status 1."""
        _created(user)
        user.serve(lambda body, n: Raw('{"nonsense": true}'))
        woke = user.hz("heinzel", "wake", "notes-digest")
        assert woke.returncode == 1, woke.stdout
        assert "HZE012: the provider's reply was not its API's shape" in woke.stderr
        assert "base_url" in woke.stderr, woke.stderr

    @pytest.mark.parametrize("reply", ['{"report": "x", "draft": ', {"draft": "not a draft"}])
    def test_an_invalid_outcome_gets_one_retry(self, user: User, reply: Any) -> None:
        """Garbage JSON or an outcome that fails validation: the model is asked once more,
        then HZE011 with its fix and exit status 1."""
        _created(user)
        provider = user.serve(lambda body, n: Outcome(reply))
        woke = user.hz("heinzel", "wake", "notes-digest")
        assert woke.returncode == 1, woke.stdout
        assert "HZE011: the model's reply was not a valid outcome, after one retry" in woke.stderr
        hint = woke.stderr.splitlines()[-1]
        assert '`hz heinzel retry notes-digest "hint"`' in hint and "NAME" not in hint, hint
        assert len(provider.seen) == 2

    def test_killed_during_think_resumes_without_a_second_spend(self, user: User) -> None:
        """Killed after the first model request, the tick resumes from it: one request more."""
        _created(user)
        provider = user.serve(outcome_after_report(DRAFT))
        killed = user.hz("heinzel", "wake", "notes-digest", HZ_CRASH_AT="after:model.request")
        assert killed.returncode == 137, killed.stderr
        assert len(provider.seen) == 1
        tick = user.hz("system", "daemon", "tick")
        assert tick.returncode == 0, tick.stderr
        assert len(provider.seen) == 2 and answered_a_tool(provider.seen[1].body)
        finished = [e.data for e in _events(user) if e.kind == "turn.finished"]
        assert finished[-1]["disposition"] == "drafted", finished


class TestTokens:
    """Tokens beside cost (ADR 0049 statements 7 and 20): each request's, the turn's sum on
    `turn.finished`, and `show`'s month by cause."""

    def test_the_turn_and_show_carry_tokens_and_cached_tokens(self, user: User) -> None:
        """A drafted turn on the provider, which says 400 of each request's input came from
        its cache: `turn.finished` has the requests' tokens and cached tokens summed, and
        `show` gives them by cause."""
        _created(user)
        provider = user.serve(outcome_after_report(DRAFT))
        provider.cached = 400
        woke = user.hz("heinzel", "wake", "notes-digest", "--json")
        assert woke.returncode == 0, woke.stderr
        events = _events(user)
        turn = json.loads(woke.stdout)["turn"]
        requests = [e.data for e in events if e.kind == "model.request" and e.turn == turn]
        [finished] = [e.data for e in events if e.kind == "turn.finished" and e.turn == turn]
        assert requests and all(r["cached"] == 400 for r in requests), requests
        assert finished["tokens"] == sum(r["tokens"] for r in requests) > 0
        assert finished["tokens_cached"] == 400 * len(requests)
        # what `show` reads back from the index (its logic, not the process): in this process
        shown = json.loads(user.in_process("heinzel", "show", "notes-digest", "--json").stdout)
        month = shown["cost_month"]
        assert month["tokens_by_cause"]["asked"] == {
            "tokens": finished["tokens"],
            "tokens_cached": finished["tokens_cached"],
        }
        [row] = [t for t in shown["turns"] if t["id"] == turn]
        assert (row["tokens"], row["tokens_cached"]) == (finished["tokens"], 400 * len(requests))
        text = user.in_process("heinzel", "show", "notes-digest").stdout
        assert f"{finished['tokens']:,} asked" in text
        assert f"{finished['tokens_cached']:,} of them cached" in text
