"""The tick's own event kind is frozen beside heinzel's."""

from __future__ import annotations

from heinzel.vocabulary import LIFECYCLE_KINDS, TICK_KINDS, TURN_KINDS
from machines.vocabulary import KINDS


class TestTickKinds:
    """The list only grows; a change here is a change to a file format."""

    def test_tick_kinds_are_pinned_and_named_once(self) -> None:
        """notice.posted, and no kind shared with the machine or the turns."""
        assert TICK_KINDS == ("notice.posted",)
        assert not set(TICK_KINDS) & (set(KINDS) | set(LIFECYCLE_KINDS) | set(TURN_KINDS))
