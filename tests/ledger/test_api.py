"""The public surface other packages code against."""

from __future__ import annotations

import inspect

import ledger


class TestSurface:
    def test_every_exported_name_exists(self) -> None:
        """__all__ names only what the package really has."""
        assert [name for name in ledger.__all__ if not hasattr(ledger, name)] == []

    def test_the_pinned_names_are_exported(self) -> None:
        """The names other packages import stay exported."""
        pinned = {
            "Bodies", "Break", "Clock", "Event", "Index", "LedgerError", "Projection",
            "Spine", "Upgrades", "VerifyReport", "ensure_private_dir", "open_append",
            "read_events", "verify", "write_atomic",
        }  # fmt: skip
        assert pinned <= set(ledger.__all__)

    def test_the_pinned_signatures(self) -> None:
        """Keyword names of the calls other packages make."""
        assert list(inspect.signature(ledger.Spine.open).parameters) == [
            "directory", "clock", "lock_timeout", "on_durable", "upgrades", "sleep",
        ]  # fmt: skip
        assert list(inspect.signature(ledger.Spine.append).parameters) == [
            "self", "kind", "data", "turn", "key", "short_text",
        ]  # fmt: skip
        assert list(inspect.signature(ledger.read_events).parameters) == [
            "path", "from_seq", "from_offset", "kinds", "upgrades", "skip_damaged", "left_out",
        ]  # fmt: skip
        assert list(inspect.signature(ledger.Bodies.prune).parameters) == [
            "self", "now", "retention_days", "ended",
        ]  # fmt: skip
