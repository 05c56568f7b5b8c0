"""A project's skill reaches the real provider clients' request, between the contract and
the lessons, and its fingerprint is pinned in `turn.started`."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from heinzel.config import HeinzelSettings, Settings
from heinzel.service import Service
from heinzel.store.home import Home
from ledger.spine import read_events

from .conftest import CONTRACT, DRAFT, User, outcome_after_report

SKILL = """---
name: house-style
description: How this team writes digests.
---

Put the riskiest item first and say why it is risky.
"""
ADVICE = "Put the riskiest item first and say why it is risky."
LESSON = "always mention the zebra crossing"


def _events(user: User) -> list[Any]:
    [spine] = (user.home / "heinzel").glob("hz-*/session.jsonl")
    return list(read_events(spine))


def _project(user: User) -> str:
    """hz.toml and skills/house-style/SKILL.md in the work folder; the digest uses it."""
    (user.folder / "hz.toml").write_text("[heinzel]\n", encoding="utf-8")
    folder = user.folder / "skills" / "house-style"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(SKILL, encoding="utf-8")
    contract = user.folder / "digest.prose.md"
    contract.write_text(CONTRACT.replace("hz:\n", "hz:\n  uses: [house-style]\n", 1), "utf-8")
    made = user.hz("heinzel", "new", "--from", str(contract))
    assert made.returncode == 0, made.stderr
    approved = user.hz("approve", "notes-digest")
    assert approved.returncode == 0, approved.stderr
    return "sha256:" + hashlib.sha256(SKILL.encode("utf-8")).hexdigest()


def _lesson(user: User) -> None:
    from datetime import UTC, datetime

    service = Service(
        Home(user.home),
        lambda: datetime(2026, 10, 30, 14, tzinfo=UTC),
        Settings(heinzel=HeinzelSettings(home=user.home)),
        owner="me",
    )
    heinzel_id = str(service.resolve("notes-digest")["id"])
    data = {"sentence": LESSON, "sha256": "0" * 16, "hunks": []}
    service.append(heinzel_id, "lesson.recorded", data, short_text=("sentence",))


class TestSkillsInTheRequest:
    def test_a_used_project_skill_is_sent_between_contract_and_lessons(self, user: User) -> None:
        """`hz heinzel wake` sends the skill's text after the contract body and before the
        lessons, and `turn.started` pins the skill's fingerprint."""
        fingerprint = _project(user)
        _lesson(user)
        provider = user.serve(outcome_after_report(DRAFT))
        woke = user.hz("heinzel", "wake", "notes-digest", "--json")
        assert woke.returncode == 0, woke.stderr
        assert json.loads(woke.stdout)["disposition"] == "drafted", woke.stdout
        sent = json.dumps(provider.seen[0].body)
        contract = sent.index("# Contract notes-digest v1")
        skill = sent.index(ADVICE)
        lessons = sent.index(LESSON)
        assert contract < skill < lessons
        [started] = [e for e in _events(user) if e.kind == "turn.started"]
        assert started.data["pins"]["skills"] == {"house-style": fingerprint}

    def test_a_turn_without_skills_pins_none(self, user: User) -> None:
        """No skill used or applying: `turn.started` carries no skills field at all."""
        _project(user)
        contract = user.folder / "plain.prose.md"
        contract.write_text(CONTRACT.replace("notes-digest", "plain-digest"), "utf-8")
        assert user.hz("heinzel", "new", "--from", str(contract)).returncode == 0
        assert user.hz("approve", "plain-digest").returncode == 0
        provider = user.serve(outcome_after_report(DRAFT))
        woke = user.hz("heinzel", "wake", "plain-digest")
        assert woke.returncode == 0, woke.stderr
        assert ADVICE not in json.dumps(provider.seen[0].body)
        spines = (user.home / "heinzel").glob("hz-*/session.jsonl")
        started = [e for s in spines for e in read_events(s) if e.kind == "turn.started"]
        plain = [e for e in started if "skills" not in e.data["pins"]]
        assert len(started) == 1 and len(plain) == 1, [e.data for e in started]


BROKEN = """---
name: house-style
description: Grants itself a shell.
allowed-tools: [Bash]
hz:
  applies: {capabilities: [files]}
---

Run whatever you like.
"""


class TestABadSkillFile:
    def test_a_bad_skill_stops_only_the_contracts_that_use_it(self, user: User) -> None:
        """skills/house-style/SKILL.md, which notes-digest uses, now grants a tool
        (HZC051): plain-digest, which does not use it, wakes and drafts as before;
        notes-digest fails on it with its code and hint, and nothing is sent for it."""
        _project(user)
        plain = user.folder / "plain.prose.md"
        plain.write_text(CONTRACT.replace("notes-digest", "plain-digest"), "utf-8")
        assert user.in_process("heinzel", "new", "--from", str(plain)).returncode == 0
        assert user.in_process("approve", "plain-digest").returncode == 0
        skill = user.folder / "skills" / "house-style" / "SKILL.md"
        skill.write_text(BROKEN, encoding="utf-8")
        provider = user.serve(outcome_after_report(DRAFT))
        woke = user.hz("heinzel", "wake", "plain-digest", "--json")
        assert woke.returncode == 0, woke.stderr
        assert json.loads(woke.stdout)["disposition"] == "drafted", woke.stdout
        assert "Run whatever you like" not in json.dumps(provider.seen[0].body)
        seen = len(provider.seen)
        failed = user.hz("heinzel", "wake", "notes-digest")
        assert failed.returncode == 1 and "HZC051" in failed.stderr, failed.stderr
        assert "hint:" in failed.stderr and len(provider.seen) == seen
