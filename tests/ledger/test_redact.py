"""Redaction of addresses and credentials: what it catches, and that it is linear."""

from __future__ import annotations

import re

import pytest

from heinzel.engine.clean import clean_value, redact_emails
from ledger import redact

MIB = 1024 * 1024


def _unbounded_repeats(pattern: re.Pattern[str]) -> list[str]:
    """The repeats of ``pattern`` with no upper bound (``*``, ``+``, ``{n,}``)."""
    found: list[str] = []
    parsed = re._parser.parse(pattern.pattern, pattern.flags)  # type: ignore[attr-defined]
    todo = list(parsed)
    while todo:
        op, arg = todo.pop()
        name = str(op)
        if name in {"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"}:
            low, high, sub = arg
            if high == re._constants.MAXREPEAT:  # type: ignore[attr-defined]
                found.append(f"{name}({low},)")
            todo.extend(sub)
        elif name in {"SUBPATTERN", "ATOMIC_GROUP"}:
            todo.extend(arg[-1])
        elif name == "BRANCH":
            for branch in arg[1]:
                todo.extend(branch)
        elif name in {"ASSERT", "ASSERT_NOT"}:
            todo.extend(arg[1])
    return found


class TestLinear:
    @pytest.mark.parametrize("pattern", redact.patterns(), ids=lambda p: p.pattern[:24])
    def test_every_repeat_is_bounded(self, pattern: re.Pattern[str]) -> None:
        """Every quantifier of every redaction pattern has an upper bound, so a scan is linear."""
        assert _unbounded_repeats(pattern) == []

    def test_the_engine_uses_the_bounded_pattern(self) -> None:
        """The engine's input cleaning redacts through ledger.redact's bounded pattern."""
        assert redact_emails is redact.redact_emails

    @pytest.mark.parametrize(
        "text",
        [
            "." * (8 * MIB),
            "a" * (4 * MIB) + "@" + "b" * (4 * MIB),
            "a." * (4 * MIB),
            ("x" * 60 + "@" + "y.") * (8 * MIB // 63),
            "A1b2" * (2 * MIB),
        ],
        ids=["dots", "a-at-b", "a-dot", "many-ats", "token-run"],
    )
    def test_eight_mebibytes_of_adversarial_text_are_cleaned(self, text: str) -> None:
        """8 MiB built to make a backtracking scan quadratic is cleaned."""
        cleaned = clean_value(text)
        assert len(cleaned) <= len(text)
        assert redact.redact(text) != "" or text == ""


class TestWhat:
    def test_addresses(self) -> None:
        """An address is replaced; the words around it stay."""
        assert redact.redact("mail priya@acme.test today") == "mail [email] today"

    @pytest.mark.parametrize(
        "secret",
        [
            "sk-ant-api03-abcdefghijklmnop1234",
            "sk-proj-abcdefghijklmnopqrstuv",
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstu",
            "xoxb-1234567890-abcdefghij",
            "AKIAIOSFODNN7EXAMPLE",
            "Zq8vR2mT9xLp4WnB7cYd1KsF6hJ3gE5a",
        ],
    )
    def test_credentials(self, secret: str) -> None:
        """A key with a known prefix or a long high-entropy token becomes [secret]."""
        out = redact.redact(f"use {secret} here")
        assert secret not in out
        assert "[secret]" in out

    def test_assignments(self) -> None:
        """The value of password= and api_key: is redacted, the name stays."""
        out = redact.redact("password=hunter2 and API_KEY: abc123")
        assert out == "password=[secret] and API_KEY: [secret]"

    def test_plain_prose_stays(self) -> None:
        """Ordinary words, numbers and a long plain word are not taken for secrets."""
        text = "Shipped 3 fixes; internationalization_of_the_checkout_page is next."
        assert redact.redact(text) == text
