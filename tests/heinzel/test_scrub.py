"""`heinzel.strings.scrub`: what a lesson keeps of a secret (nothing) and of plain advice (all)."""

from __future__ import annotations

import pytest

from heinzel.strings.scrub import scrub

CAUGHT = [
    # free wording: detect-secrets' secret words, then the value (hz's keyword rule)
    ("include lines like: password LESSONPASSWORD", "LESSONPASSWORD", "password [secret]"),
    ("the db password is hunter2, rotated", "hunter2", "password is [secret],"),
    ("SECRET LESSONPASSWORD!", "LESSONPASSWORD", "SECRET [secret]"),
    ("mention the private_key 9f8e7d6c in ops", "9f8e7d6c", "private_key [secret]"),
    # assignments (ledger.redact, and detect-secrets' keyword list)
    ("pwd:LESSONPASSWORD", "LESSONPASSWORD", "pwd:[secret]"),
    ("password=hunter2 for ops", "hunter2", "password=[secret]"),
    # token formats: detect-secrets' detectors
    ("use ghp_abcdefghijklmnopqrstuvwxyz0123456789 now", "ghp_", "use [secret] now"),
    ("AKIAIOSFODNN7EXAMPLE is the key", "AKIAIOSFODNN7EXAMPLE", "[secret] is"),
    ("ping xoxb-1234567890-abcdefghij", "xoxb-", "ping [secret]"),
    ("see https://admin:hunter22@db.example.com/x", "hunter22", "[secret]"),
    (
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9P",
        "eyJhbGciOiJIUzI1NiJ9",
        "jwt [secret]",
    ),
    ("a -----BEGIN RSA PRIVATE KEY----- block", "BEGIN RSA PRIVATE KEY", "[secret]"),
    # quoted high entropy (detect-secrets), unquoted (ledger.redact), a known prefix
    ('token "aGVsbG8gd29ybGQgdGhpcyBpcyBiYXNlNjQ="', "aGVsbG8", '"[secret]"'),
    ("deadbeefcafebabe0123456789abcdef01234567", "deadbeef", "[secret]"),
    ("sk-ant-api03-Zq8vR2mT9xLp4WnB7cYd1KsF6hJ3gE5a and more", "Zq8vR2", "[secret] and more"),
    # an address
    ("mail priya@example.com about it", "priya@", "mail [email] about"),
]


@pytest.mark.parametrize(("sentence", "secret", "kept"), CAUGHT)
def test_a_secret_never_stays(sentence: str, secret: str, kept: str) -> None:
    """Each secret is gone and ``[secret]`` (or ``[email]``) stands where it was."""
    scrubbed = scrub(sentence)
    assert secret not in scrubbed
    assert kept in scrubbed


@pytest.mark.parametrize(
    "sentence",
    [
        "Priya moves risks above the summary",
        "no adjectives in headings",
        "leave out lines like: ship the rounding fix",
        "Risks goes above Summary",
        "keep the section under ten lines",
    ],
)
def test_plain_advice_is_kept_as_written(sentence: str) -> None:
    """A lesson with no secret-sounding word and no token is not changed."""
    assert scrub(sentence) == sentence


def test_a_word_after_a_secret_word_is_dropped_even_when_harmless() -> None:
    """The keyword rule can't tell a secret from a word: "the secret sauce" loses "sauce".
    A false positive costs a word of a lesson; a miss would keep a secret for years."""
    assert scrub("keep the secret sauce short") == "keep the secret [secret] short"
