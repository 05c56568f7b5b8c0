"""Cleaning what tools hand the model: control characters stripped, addresses redacted.

Every string a tool returns passes `clean_text` and `redact_emails` (ADR 0050
statement 3), and `clean_value` applies both through lists and mappings. Both scan
in linear time (`ledger.redact`), so an 8 MiB input of adversarial text costs no
more than an 8 MiB report.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ledger.redact import EMAIL_REDACTED, redact_emails

__all__ = ["clean_text", "clean_value", "redact_emails"]

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")
REDACTED = EMAIL_REDACTED


def clean_text(text: str) -> str:
    """``text`` without control and bidi-override characters (newline and tab stay)."""
    return _CONTROL.sub("", text.replace("\r\n", "\n"))


def clean_value(value: Any) -> Any:
    """``value`` with every string in it cleaned and redacted (lists, tuples, mappings)."""
    if isinstance(value, str):
        return redact_emails(clean_text(value))
    if isinstance(value, Mapping):
        return {clean_value(k): clean_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean_value(v) for v in value]
    return value
