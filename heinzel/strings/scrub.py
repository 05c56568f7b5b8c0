"""What a short text the user is meant to read may keep: no secret, no address.

A lesson (ADR 0049, statement 6) is a sentence a model wrote from the user's edits, and the
spine and the index keep it for years, so a secret the user typed into a draft must not
ride along in it. `scrub` layers a maintained secret scanner over hz's own rules:

1. detect-secrets' detectors of known token formats (AWS, Azure, GitHub, GitLab, JWT,
   OpenAI, Slack, Stripe, Twilio, npm, PyPI, private-key headers, credentials in URLs,
   ...): each detector's regexes, every whole match replaced (a detector reports only a
   capture group of some, such as GitHub's ``ghp``, so its findings are not used as they
   are);
2. detect-secrets' high-entropy detectors on quoted strings, at their own limits;
3. `ledger.redact`: e-mail addresses, ``password=``-style assignments and unquoted
   high-entropy tokens, which detect-secrets leaves alone outside quotes;
4. the keyword rule on free wording: detect-secrets' keyword detector only reads
   assignments (``password = "..."``), so its list of secret-sounding words (``password``,
   ``passwd``, ``pwd``, ``secret``, ``api_key``, ``private_key``, ...) is matched here in a
   phrase, and the word after it (``password LESSONPASSWORD``, ``the secret is hunter2``)
   becomes ``[secret]``.

Every value is replaced by ``[secret]``; a false positive costs a word of a lesson, a miss a
leaked secret. detect-secrets is only asked for regexes and entropy, never to verify a
finding (which would send it to the provider): nothing leaves the machine. It is imported
on the first call, so a process that records no lesson never loads it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from ledger.redact import SECRET_REDACTED, redact

__all__ = ["scrub"]

_SEPARATOR = r"(?:\s{0,8}[:=]\s{0,8}|\s{1,8}(?:is|was|are|reads|of|for|to)\s{1,8}|\s{1,8})"
_VALUE = r"(?!\[secret\])[^\s,;]{1,512}"


@functools.cache
def _scanners() -> tuple[Callable[[str], str], ...]:
    """detect-secrets' patterns and entropy checks as replacements, and the keyword rule."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector
    from detect_secrets.plugins.high_entropy_strings import (
        Base64HighEntropyString,
        HexHighEntropyString,
    )
    from detect_secrets.plugins.keyword import DENYLIST

    plugins: list[type[Any]] = list(get_mapping_from_secret_type_to_class().values())
    patterns = [
        regex
        for plugin in plugins
        if issubclass(plugin, RegexBasedDetector)
        for regex in plugin().denylist
    ]
    entropy = [Base64HighEntropyString(), HexHighEntropyString()]

    def known(text: str) -> str:
        for regex in patterns:
            text = regex.sub(SECRET_REDACTED, text)
        return text

    def quoted(text: str) -> str:
        for plugin in entropy:
            for value in set(plugin.analyze_string(text)):
                if plugin.calculate_shannon_entropy(value) > plugin.entropy_limit:
                    text = text.replace(value, SECRET_REDACTED)
        return text

    keyword = rf"(?i:\b(?:{'|'.join(DENYLIST)})[\w-]{{0,32}})"
    phrase = re.compile(f"({keyword}{_SEPARATOR})({_VALUE})")

    def worded(text: str) -> str:
        return phrase.sub(lambda m: m.group(1) + SECRET_REDACTED, text)

    return known, quoted, redact, worded


def scrub(text: str) -> str:
    """``text`` with every secret a scanner finds and every e-mail address redacted."""
    for scanner in _scanners():
        text = scanner(text)
    return text
