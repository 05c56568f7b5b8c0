"""Redaction in linear time: e-mail addresses and credential-shaped strings.

Every pattern here has only bounded quantifiers (an address's local part at most
64 characters, a domain label 63, a token 512), so the work the regex engine does
from any start position is bounded by a constant and a scan is linear in the
text's length, whatever the text holds (a line of dots, ``a``x50,000 ``@``
``b``x50,000). A longer run is matched in pieces, each redacted.

`redact_emails` replaces addresses with ``[email]``; `redact_secrets` replaces
keys with a known prefix (``sk-``, ``sk-ant-``, ``ghp_``, ``github_pat_``,
``xox?-``, ``AKIA``), the value of ``password=``-style assignments, and long
high-entropy tokens with ``[secret]``; `redact` does both.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter

__all__ = [
    "EMAIL_REDACTED",
    "SECRET_REDACTED",
    "patterns",
    "redact",
    "redact_emails",
    "redact_secrets",
]

EMAIL_REDACTED = "[email]"
SECRET_REDACTED = "[secret]"  # noqa: S105 (the placeholder, not a password)


@functools.cache
def patterns() -> tuple[re.Pattern[str], ...]:
    """The e-mail, known-key, assignment and token patterns, compiled on first use (a
    process that redacts nothing compiles none)."""
    email = re.compile(
        r"[A-Za-z0-9._%+\-]{1,64}@[A-Za-z0-9\-]{1,63}(?:\.[A-Za-z0-9\-]{1,63}){0,8}\.[A-Za-z]{2,24}"
    )
    keys = re.compile(
        r"(?:sk-ant-[A-Za-z0-9_\-]{8,512}|sk-[A-Za-z0-9_\-]{16,512}|gh[pousr]_[A-Za-z0-9]{20,255}"
        r"|github_pat_[A-Za-z0-9_]{20,255}|xox[abposr]-[A-Za-z0-9\-]{10,255}|AKIA[0-9A-Z]{16})"
    )
    assigned = re.compile(
        r"((?i:password|passwd|pwd|secret|token|api[_\-]?key|access[_\-]?key)\s{0,8}[:=]\s{0,8})"
        r"[^\s,;]{1,512}"
    )
    token = re.compile(r"[A-Za-z0-9+/=_\-]{32,512}")
    return email, keys, assigned, token


_MIN_ENTROPY = 3.5


def redact_emails(text: str) -> str:
    """``text`` with every e-mail address replaced by ``[email]``."""
    return patterns()[0].sub(EMAIL_REDACTED, text) if "@" in text else text


def _entropy(token: str) -> float:
    """Shannon entropy of ``token`` in bits per character."""
    counts = Counter(token)
    size = len(token)
    return -sum(n / size * math.log2(n / size) for n in counts.values())


def _token(match: re.Match[str]) -> str:
    token = match.group(0)
    mixed = any(c.isdigit() for c in token) and any(c.isalpha() for c in token)
    return SECRET_REDACTED if mixed and _entropy(token) >= _MIN_ENTROPY else token


def redact_secrets(text: str) -> str:
    """``text`` with known keys, ``password=`` values and high-entropy tokens as ``[secret]``."""
    _, keys, assigned, tokens = patterns()
    text = keys.sub(SECRET_REDACTED, text)
    text = assigned.sub(lambda m: m.group(1) + SECRET_REDACTED, text)
    return tokens.sub(_token, text)


def redact(text: str) -> str:
    """``text`` with e-mail addresses and credential-shaped strings redacted."""
    return redact_secrets(redact_emails(text))
