"""Strings that are not Unicode text: found, shown escaped, refused with a code.

Python hands bytes it cannot decode over as lone surrogates: the command line's
undecodable ``argv`` bytes as U+DC80..U+DCFF (``surrogateescape``), a JSON ``"\\ud800"``
escape as itself. No such string can be hashed, written to a spine or an inbox, or sent
back as UTF-8, so each surface refuses it where it comes in, with its own code.
"""

from __future__ import annotations

from heinzel.errors import HeinzelError

__all__ = ["escaped", "is_text", "not_text"]

SHOWN = 80
"""How many characters of a refused string a message shows."""


def is_text(value: str) -> bool:
    """True when ``value`` is Unicode text (encodable as UTF-8: no lone surrogate)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def escaped(value: str) -> str:
    """``value`` (its first `SHOWN` characters) printable: an undecodable byte as ``\\xNN``,
    any other lone surrogate as ``\\uNNNN``; the rest as it is."""
    out = []
    for char in value[:SHOWN]:
        point = ord(char)
        if 0xDC80 <= point <= 0xDCFF:
            out.append(f"\\x{point - 0xDC00:02x}")
        elif 0xD800 <= point <= 0xDFFF:
            out.append(f"\\u{point:04x}")
        else:
            out.append(char)
    return "".join(out) + ("..." if len(value) > SHOWN else "")


def not_text(code: str, what: str, value: str, hint: str) -> HeinzelError:
    """The refusal of ``value``, the ``what`` that is not Unicode text, under ``code``."""
    return HeinzelError(code, f"{what} is not UTF-8 text: '{escaped(value)}'", hint)
