"""USD as a person reads it, in every surface (`hz heinzel list`, show, wake's line,
report, drafts, the page, MCP's text): one rule, `usd_text`, always followed by ``USD``
(never ``$``). The figures themselves come from one query
(`heinzel.session.spend.today_each` for "today"), rounded to 9 decimals, so ``--json``
and MCP carry the same number the text shows, without float dust."""

from __future__ import annotations

from decimal import Decimal

__all__ = ["usd_text"]


def usd_text(usd: float) -> str:
    """Two decimals from a cent up (``1.50``), every digit a sub-cent amount needs below it
    (``0.00042``, at most 9 decimals), and ``0.00`` for nothing: a spend is never shown
    as ``0.00``."""
    if usd == 0 or abs(usd) >= 0.01:
        return f"{usd:.2f}"
    return format(Decimal(repr(round(usd, 9))).normalize(), "f")
