"""heinzel's own event kinds are frozen beside the machine's."""

from __future__ import annotations

from heinzel.vocabulary import HOST_HIDDEN, LIFECYCLE_KINDS, TURN_KINDS
from machines.vocabulary import KINDS


class TestVocabulary:
    """The lists only grow; a change here is a change to a file format."""

    def test_lifecycle_kinds_are_pinned(self) -> None:
        """The lifecycle kinds, in order."""
        assert LIFECYCLE_KINDS == (
            "heinzel.created",
            "heinzel.renamed",
            "heinzel.paused",
            "heinzel.unpaused",
            "heinzel.retired",
            "heinzel.unretired",
            "contract.proposed",
            "contract.approved",
            "amendment.proposed",
        )

    def test_turn_kinds_are_pinned(self) -> None:
        """What heinzel's turns add."""
        assert TURN_KINDS == (
            "step.tool",
            "amendment.filed",
            "amendment.refused",
            "input.fell_back",
        )

    def test_no_kind_is_named_twice(self) -> None:
        """heinzel's kinds and the machine's never overlap."""
        assert not set(LIFECYCLE_KINDS + TURN_KINDS) & set(KINDS)

    def test_checkpoints_stay_out_of_the_context(self) -> None:
        """The machine's checkpoint kinds are hidden from the context builder."""
        assert {"model.request", "step.started", "tool.called"} <= HOST_HIDDEN
