"""USD as a person reads it, in every surface (`hz heinzel show`, list, report, the web)."""

from __future__ import annotations

from decimal import Decimal

__all__ = ["usd_text"]


def usd_text(usd: float) -> str:
    """Two decimals, or every digit a sub-cent amount needs (``0.00042``): a spend is
    never shown as ``0.00``."""
    if usd == 0 or abs(usd) >= 0.01:
        return f"{usd:.2f}"
    return format(Decimal(repr(round(usd, 9))).normalize(), "f")
