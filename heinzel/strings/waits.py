"""The words of what waits on the user, one function per notice: a question it asks and a
draft that waits for approval read the same on every surface (`hz heinzel list`,
`hz drafts`, `hz heinzel show`, the wake line, the page and MCP), since each builds them
here."""

from __future__ import annotations

__all__ = ["asks", "asks_notice", "draft_waits", "may_it_run"]


def asks(text: str) -> str:
    """One question waiting on the user, in its words: ``asks: TEXT``."""
    return f"asks: {text}"


def may_it_run(tool: str) -> str:
    """The question a write proposed in a chat turn asks: ``may it run TOOL?``."""
    return f"may it run {tool}?"


def asks_notice(texts: list[str]) -> str:
    """The notice of the questions waiting (oldest first): the first in its words, and how
    many more wait."""
    more = f" (and {len(texts) - 1} more)" if len(texts) > 1 else ""
    return asks(texts[0]) + more


def draft_waits(place: str | None) -> str:
    """A draft waiting for approval, where it was placed (an asset ref or a path)."""
    where = str(place or "").removeprefix("file:")
    return (
        f"a draft waits for your approval in {where}"
        if where
        else "a draft waits for your approval"
    )
